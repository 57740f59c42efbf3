import { createHmac } from 'node:crypto';
import { DAY, MINUTE, type Clock } from '../../lib/clock.ts';
import { constantTimeEqual, sha256Hex } from '../../lib/crypto.ts';
import { newSeq, type SandboxStore } from './store/index.ts';
import type { SandboxMediaRow } from './store/tables.ts';

export const MEDIA_KINDS = ['image', 'video', 'audio', 'document', 'sticker'] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

/**
 * Accepted MIME types and maximum sizes per kind (§5), in decimal bytes as the provider counts them.
 * `audio/ogg` is accepted with or without `; codecs=opus` (the provider takes only OPUS in it).
 */
export const MEDIA_LIMITS: Readonly<Record<MediaKind, { mimeTypes: readonly string[]; maxBytes: number }>> = {
  image: { mimeTypes: ['image/jpeg', 'image/png'], maxBytes: 5_000_000 },
  video: { mimeTypes: ['video/mp4', 'video/3gpp'], maxBytes: 16_000_000 },
  audio: { mimeTypes: ['audio/aac', 'audio/amr', 'audio/mpeg', 'audio/mp4', 'audio/ogg'], maxBytes: 16_000_000 },
  document: {
    mimeTypes: [
      'text/plain',
      'application/pdf',
      'application/msword',
      'application/vnd.ms-excel',
      'application/vnd.ms-powerpoint',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    ],
    maxBytes: 100_000_000,
  },
  sticker: { mimeTypes: ['image/webp'], maxBytes: 500_000 },
};

/** The largest file any kind accepts: the upload route's body limit is this plus multipart overhead. */
export const LARGEST_MEDIA_BYTES = Math.max(...Object.values(MEDIA_LIMITS).map((limit) => limit.maxBytes));

/** Download URLs from `GET /{media_id}` work for 5 minutes (§5). */
export const MEDIA_URL_TTL_MS = 5 * MINUTE;
/** Uploaded media ids live 30 days; ids received in webhooks 7 days (§5). */
export const UPLOADED_MEDIA_TTL_MS = 30 * DAY;
export const RECEIVED_MEDIA_TTL_MS = 7 * DAY;
/** Default cap on the media bytes the sandbox keeps; the oldest media are dropped beyond it. */
export const DEFAULT_MEDIA_MAX_TOTAL_BYTES = 256_000_000;

/** The MIME type without parameters, lower case: `Audio/OGG; codecs=opus` → `audio/ogg`. */
export function baseMimeType(mimeType: string): string {
  return (mimeType.split(';')[0] ?? '').trim().toLowerCase();
}

/** The kind a MIME type belongs to; `image/webp` is a sticker, as the provider classifies it. */
export function mediaKindOf(mimeType: string): MediaKind | undefined {
  const base = baseMimeType(mimeType);
  return MEDIA_KINDS.find((kind) => MEDIA_LIMITS[kind].mimeTypes.includes(base));
}

export interface SandboxMedia {
  id: string;
  wabaId: string;
  /** The number that uploaded it, or that received it from a user. */
  phoneNumberId: string;
  mimeType: string;
  bytes: Buffer;
  sha256: string;
  filename: string | undefined;
  origin: 'uploaded' | 'received';
  createdAt: Date;
  expiresAt: Date;
}

/**
 * Small stand-in files for media a simulated user sends without providing bytes. They start with
 * their format's signature, so content sniffers agree with the MIME type; they are not playable.
 */
const PLACEHOLDER_SIGNATURES: Readonly<Record<MediaKind, Buffer>> = {
  image: Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  video: Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42')]),
  audio: Buffer.from('OggS'),
  document: Buffer.from('%PDF-1.4\n'),
  sticker: Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x1a, 0, 0, 0]), Buffer.from('WEBPVP8 ')]),
};

export const PLACEHOLDER_MIME_TYPES: Readonly<Record<MediaKind, string>> = {
  image: 'image/jpeg',
  video: 'video/mp4',
  audio: 'audio/ogg; codecs=opus',
  document: 'application/pdf',
  sticker: 'image/webp',
};

export function placeholderBytes(kind: MediaKind): Buffer {
  return Buffer.concat([PLACEHOLDER_SIGNATURES[kind], Buffer.from(`sandbox placeholder ${kind}\n`)]);
}

function mediaOf(row: SandboxMediaRow): SandboxMedia {
  return {
    id: row.id,
    wabaId: row.waba_id,
    phoneNumberId: row.phone_number_id,
    mimeType: row.mime_type,
    bytes: Buffer.from(row.bytes, 'base64'),
    sha256: row.sha256,
    filename: row.filename ?? undefined,
    origin: row.origin as SandboxMedia['origin'],
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
  };
}

/**
 * Media in the store's `sandbox_media` table, shared by every process serving the sandbox, with a cap
 * on total bytes; download URLs are signed so they need no storage.
 */
export function createMediaStore(options: {
  store: SandboxStore;
  clock: Clock;
  newId: () => Promise<string>;
  /** Signs download URLs; every process serving the sandbox must use the same key. */
  urlKey: Buffer;
  maxTotalBytes?: number;
}) {
  const { db } = options.store;
  const maxTotalBytes = options.maxTotalBytes ?? DEFAULT_MEDIA_MAX_TOTAL_BYTES;
  const { urlKey } = options;

  async function totalBytes(): Promise<number> {
    const row = await db
      .selectFrom('sandbox_media')
      .select((eb) => eb.fn.sum<number | string | null>('size').as('total'))
      .executeTakeFirstOrThrow();
    // PostgreSQL answers a bigint sum as text, and either backend answers null for no rows.
    return Number(row.total ?? 0);
  }

  async function remove(id: string): Promise<boolean> {
    const result = await db.deleteFrom('sandbox_media').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /**
   * Drops expired files, then the oldest (by `seq`) until the total is back under the cap. It runs
   * after the insert rather than before, so that puts racing in several processes leave the table
   * over the cap only until the last of them trims. The cap is approximate while puts race: it can
   * be exceeded by the files in flight, and two trims interleaving can drop a file more than needed.
   */
  async function trim(): Promise<void> {
    await db.deleteFrom('sandbox_media').where('expires_at', '<=', options.clock.now().toISOString()).execute();
    let excess = (await totalBytes()) - maxTotalBytes;
    if (excess <= 0) return;
    let newestDropped: string | undefined;
    // Sizes only, oldest first: the bytes are never read to make room.
    for (const row of await db.selectFrom('sandbox_media').select(['seq', 'size']).orderBy('seq').execute()) {
      if (excess <= 0) break;
      newestDropped = row.seq;
      excess -= row.size;
    }
    if (newestDropped !== undefined) await db.deleteFrom('sandbox_media').where('seq', '<=', newestDropped).execute();
  }

  function signature(id: string, expiresAtSeconds: number): string {
    return createHmac('sha256', urlKey).update(`${id}.${expiresAtSeconds}`).digest('base64url');
  }

  return {
    totalBytes,
    maxTotalBytes,

    /** Stores a file; the oldest files are dropped to stay under the cap, as expiry would drop them. */
    async put(fields: {
      wabaId: string;
      phoneNumberId: string;
      mimeType: string;
      bytes: Buffer;
      filename?: string | undefined;
      origin: SandboxMedia['origin'];
    }): Promise<SandboxMedia | undefined> {
      if (fields.bytes.length > maxTotalBytes) return undefined;
      const now = options.clock.now();
      const stored: SandboxMedia = {
        id: await options.newId(),
        wabaId: fields.wabaId,
        phoneNumberId: fields.phoneNumberId,
        mimeType: fields.mimeType,
        bytes: fields.bytes,
        sha256: sha256Hex(fields.bytes),
        filename: fields.filename,
        origin: fields.origin,
        createdAt: now,
        expiresAt: new Date(now.getTime() + (fields.origin === 'uploaded' ? UPLOADED_MEDIA_TTL_MS : RECEIVED_MEDIA_TTL_MS)),
      };
      await db
        .insertInto('sandbox_media')
        .values({
          id: stored.id,
          seq: newSeq(now),
          waba_id: stored.wabaId,
          phone_number_id: stored.phoneNumberId,
          mime_type: stored.mimeType,
          bytes: stored.bytes.toString('base64'),
          size: stored.bytes.length,
          sha256: stored.sha256,
          filename: stored.filename ?? null,
          origin: stored.origin,
          created_at: now.toISOString(),
          expires_at: stored.expiresAt.toISOString(),
        })
        .execute();
      await trim();
      return stored;
    },

    /** The media, unless it never existed, was deleted or has expired (then it is dropped). */
    async find(id: string): Promise<SandboxMedia | undefined> {
      const row = await db.selectFrom('sandbox_media').selectAll().where('id', '=', id).executeTakeFirst();
      if (row === undefined) return undefined;
      const found = mediaOf(row);
      if (found.expiresAt.getTime() <= options.clock.now().getTime()) {
        await remove(id);
        return undefined;
      }
      return found;
    },

    remove,

    /** Query parameters of a download URL valid for `MEDIA_URL_TTL_MS` from now. */
    signDownload(id: string): { mid: string; ext: string; hash: string } {
      const expiresAtSeconds = Math.floor((options.clock.now().getTime() + MEDIA_URL_TTL_MS) / 1000);
      return { mid: id, ext: String(expiresAtSeconds), hash: signature(id, expiresAtSeconds) };
    },

    /** Whether download parameters are authentic and not yet expired. */
    verifyDownload(query: { mid?: unknown; ext?: unknown; hash?: unknown }): 'valid' | 'invalid' | 'expired' {
      if (typeof query.mid !== 'string' || typeof query.ext !== 'string' || typeof query.hash !== 'string' || !/^\d+$/.test(query.ext)) return 'invalid';
      const expiresAtSeconds = Number(query.ext);
      if (!constantTimeEqual(query.hash, signature(query.mid, expiresAtSeconds))) return 'invalid';
      return options.clock.now().getTime() < expiresAtSeconds * 1000 ? 'valid' : 'expired';
    },
  };
}

export type MediaStore = ReturnType<typeof createMediaStore>;
