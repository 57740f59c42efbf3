import type { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import type { Db, Trx } from '../../db/connect.ts';
import type { MediaTable } from '../../db/schema.ts';
import { mediaFetch } from '../../jobs/catalog.ts';
import { isRetryable } from '../../jobs/job.ts';
import type { Queue } from '../../jobs/queue.ts';
import { DAY, type Clock } from '../../lib/clock.ts';
import { AppError, invalidParam } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { isProviderError, type MediaKind, type MediaSource, type Provider, type ProviderCredentials } from '../../provider/provider.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import { assertModeAllows, type ConnectionsService } from '../connections/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import type { MediaStorage } from './media-storage.ts';
import { baseMimeType, bytesMatch, kindOf, LARGEST_MEDIA_BYTES, MAX_BYTES, MEDIA_KINDS, mimeTypesOf, SNIFF_BYTES, sniffMimeType } from './media-types.ts';
import type { Media, MediaSource as Origin, MediaStatus, UploadMediaFields } from './media.schemas.ts';
import type { MediaStore } from './media.store.ts';

/** The provider forgets an uploaded media id after 30 days (cloud-api-facts.md §5). */
export const PROVIDER_MEDIA_TTL_MS = 30 * DAY;
/**
 * A provider id this close to its expiry is uploaded again rather than reused: a message sent with it
 * may wait in the queue, be retried, and only then be fetched by the provider.
 */
export const REUPLOAD_MARGIN_MS = DAY;

const GENERIC_MIME_TYPE = 'application/octet-stream';

function toMedia(row: MediaTable): Media {
  return {
    id: row.id,
    object: 'media',
    kind: row.kind as MediaKind,
    mime_type: row.mime_type,
    size: row.size,
    sha256: row.sha256,
    filename: row.filename,
    connection_id: row.connection_id,
    source: row.source as Origin,
    status: row.status as MediaStatus,
    failure_reason: row.failure_reason,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A name as a person gave it, without a path or control characters; null when nothing is left. */
export function safeFilename(name: string | undefined): string | null {
  const base = name?.split(/[\\/]/).pop() ?? '';
  const printable = [...base]
    .filter((character) => character >= ' ' && (character < '\u007f' || character > '\u009f'))
    .join('')
    .trim();
  const bounded = [...printable].slice(0, 255).join('');
  return bounded === '' || bounded === '.' || bounded === '..' ? null : bounded;
}

/** The provider announces a media's SHA-256 in hex (media node) or base64 (webhooks); either is checked. */
function digestContradicts(announced: string, hex: string): boolean {
  if (/^[0-9a-f]{64}$/i.test(announced)) return announced.toLowerCase() !== hex;
  if (/^[A-Za-z0-9+/]{43}=$/.test(announced)) return Buffer.from(hex, 'hex').toString('base64') !== announced;
  return false;
}

function unsupportedType(mimeType: string, param: string): AppError {
  const accepted = MEDIA_KINDS.map((kind) => `${kind}: ${mimeTypesOf(kind).join(', ')}`).join('; ');
  return new AppError('media_type_unsupported', `${mimeType || 'A file without a type'} is not a type the provider accepts. Accepted types: ${accepted}.`, {
    param,
  });
}

function tooLarge(kind: MediaKind, param: string): AppError {
  return new AppError('media_too_large', `${kind} media may be at most ${MAX_BYTES[kind]} bytes.`, { param });
}

/**
 * Passes the bytes on while checking them: the kind's size limit (as soon as it is passed, not after
 * storing it all), the signature of the declared type, and that there is at least one byte.
 */
async function* checked(content: AsyncIterable<Uint8Array>, mimeType: string, kind: MediaKind): AsyncGenerator<Uint8Array> {
  const checkHead = (head: Buffer) => {
    if (bytesMatch(mimeType, head)) return;
    const looksLike = sniffMimeType(head);
    throw new AppError('media_type_unsupported', `The file's bytes are not ${mimeType}${looksLike ? `; they look like ${looksLike}` : ''}.`, {
      param: '/file',
    });
  };
  let size = 0;
  let head = Buffer.alloc(0);
  for await (const chunk of content) {
    size += chunk.byteLength;
    if (size > MAX_BYTES[kind]) throw tooLarge(kind, '/file');
    if (head.length < SNIFF_BYTES) {
      head = Buffer.concat([head, chunk.subarray(0, SNIFF_BYTES - head.length)]);
      if (head.length === SNIFF_BYTES) checkHead(head);
    }
    yield chunk;
  }
  if (size === 0) throw invalidParam('/file', 'must not be empty', 'too_short');
  if (head.length < SNIFF_BYTES) checkHead(head);
}

/** An upload whose bytes are stored but which is not a media yet: `create` makes it one, `discard` drops it. */
export interface StagedUpload {
  id: string;
  storageKey: string;
  organizationId: string;
  connectionId: string | null;
  kind: MediaKind;
  mimeType: string;
  filename: string | null;
  size: number;
  sha256: string;
}

export interface MediaServiceDeps {
  db: Db;
  store: MediaStore;
  storage: Pick<MediaStorage, 'put' | 'get' | 'delete'>;
  clock: Clock;
  queue: Pick<Queue, 'enqueue'>;
  provider: Provider;
  audit: Pick<AuditEventsService, 'record'>;
  connections: Pick<ConnectionsService, 'findMany' | 'providerAccessForWork' | 'reportProviderError'>;
}

/**
 * Told of bytes kept, in the transaction that keeps them (usage's `media_bytes`): an upload that
 * became a media, or an inbound media fetched from the provider. `test`: uploaded with a test key.
 */
export type MediaStoredListener = (trx: Trx, stored: { organizationId: string; connectionId: string | null; bytes: number; test: boolean }) => Promise<void>;

export function createMediaService(deps: MediaServiceDeps) {
  const { db, store, storage, clock, queue, provider, audit, connections } = deps;
  const storedListeners: MediaStoredListener[] = [];
  const notFound = (param: string | null = null) => new AppError('resource_not_found', 'No such media.', { param });

  /**
   * A media the caller may see: the organization's, and for a connection key only the organization's
   * own uploads and its own number's media. Media of a number also follow the test/live mode rule.
   */
  async function visibleRow(principal: Principal, id: string): Promise<MediaTable> {
    const row = await store.find(db, principal.organizationId, id);
    if (!row) throw notFound();
    if (row.connection_id !== null) {
      if (principal.connectionId !== null && principal.connectionId !== row.connection_id) throw notFound();
      const connection = (await connections.findMany(principal, [row.connection_id])).get(row.connection_id);
      if (connection) assertModeAllows(principal, connection);
    }
    return row;
  }

  /** Refuses media whose bytes are not (or no longer) here. */
  function assertReady(row: MediaTable, param: string | null): void {
    if (row.status === 'pending') throw new AppError('invalid_state', 'The media is still being fetched from the provider; try again shortly.', { param });
    if (row.status === 'failed') {
      throw new AppError(
        'media_expired',
        `The media's bytes could not be fetched from the provider and are gone${row.failure_reason ? ` (${row.failure_reason})` : ''}.`,
        { param },
      );
    }
  }

  async function markFailed(row: MediaTable, reason: string): Promise<void> {
    await store.updatePending(db, row.id, { status: 'failed', failure_reason: reason.slice(0, 500), updated_at: clock.now().toISOString() });
  }

  return {
    /**
     * Stores an upload's bytes, checking them on the way (type, size, signature), before the request
     * is known to be a new one: the Idempotency-Key's hash needs the file's SHA-256. `declaredType`
     * is the form's `type`, `partType` the file part's own Content-Type.
     */
    async stage(
      principal: Principal,
      input: { declaredType: string | undefined; partType: string; filename: string | undefined; content: AsyncIterable<Uint8Array> },
    ): Promise<StagedUpload> {
      const partType = baseMimeType(input.partType);
      const mimeType = input.declaredType === undefined ? partType : baseMimeType(input.declaredType);
      if (input.declaredType !== undefined && partType !== '' && partType !== GENERIC_MIME_TYPE && partType !== mimeType) {
        throw new AppError('media_type_unsupported', `The file part's Content-Type (${partType}) contradicts \`type\` (${mimeType}).`, { param: '/type' });
      }
      const kind = kindOf(mimeType);
      if (kind === undefined) throw unsupportedType(mimeType, input.declaredType === undefined ? '/file' : '/type');
      const id = newId('media', clock.now().getTime());
      const stored = await storage.put(id, checked(input.content, mimeType, kind));
      return {
        id,
        storageKey: id,
        organizationId: principal.organizationId,
        connectionId: principal.connectionId,
        kind,
        mimeType,
        filename: safeFilename(input.filename),
        size: stored.size,
        sha256: stored.sha256,
      };
    },

    /** Registers a listener told of every media's bytes kept (see `MediaStoredListener`). */
    onStored(listener: MediaStoredListener): void {
      storedListeners.push(listener);
    },

    /** Turns a staged upload into a media. */
    async create(actor: Actor, staged: StagedUpload, fields: Omit<UploadMediaFields, 'file' | 'type'>): Promise<Media> {
      const now = clock.now().toISOString();
      const row: MediaTable = {
        id: staged.id,
        organization_id: staged.organizationId,
        connection_id: staged.connectionId,
        source: 'upload',
        status: 'ready',
        kind: staged.kind,
        mime_type: staged.mimeType,
        size: staged.size,
        sha256: staged.sha256,
        filename: staged.filename,
        storage_key: staged.storageKey,
        provider_media_id: null,
        provider_sha256: null,
        failure_reason: null,
        metadata: JSON.stringify(fields.metadata ?? {}),
        created_at: now,
        updated_at: now,
      };
      await db.transaction().execute(async (trx) => {
        await store.insert(trx, row);
        await audit.record(trx, actor, {
          action: 'media.uploaded',
          target: { type: 'media', id: row.id },
          data: { kind: row.kind, mime_type: row.mime_type, size: row.size },
        });
        for (const listener of storedListeners) {
          await listener(trx, {
            organizationId: row.organization_id,
            connectionId: row.connection_id,
            bytes: staged.size,
            test: actor.principal.mode === 'test',
          });
        }
      });
      return toMedia(row);
    },

    /** Drops the bytes of an upload that did not become a media (refused, replayed, failed). */
    async discard(staged: StagedUpload): Promise<void> {
      await storage.delete(staged.storageKey);
    },

    async get(principal: Principal, id: string): Promise<Media> {
      return toMedia(await visibleRow(principal, id));
    },

    /** The media and its bytes, for a download; the caller must read or destroy the stream. */
    async open(principal: Principal, id: string): Promise<{ media: Media; content: Readable }> {
      const row = await visibleRow(principal, id);
      assertReady(row, null);
      return { media: toMedia(row), content: await storage.get(row.storage_key!) };
    },

    /**
     * For the send pipeline, before a message is queued: the media is this organization's, its bytes
     * are here, and the provider takes it as `kind` (its type is one the provider files under that
     * kind, within that kind's size). Errors name `param`.
     */
    async assertUsable(executor: Db, organizationId: string, mediaId: string, kind: MediaKind, param: string): Promise<void> {
      const row = await store.find(executor, organizationId, mediaId);
      if (!row) throw notFound(param);
      assertReady(row, param);
      if (kindOf(row.mime_type) !== kind) {
        throw new AppError(
          'media_type_unsupported',
          `The media is ${row.mime_type}, which cannot be sent as ${kind}; ${kind} takes ${mimeTypesOf(kind).join(', ')}.`,
          { param },
        );
      }
      if ((row.size ?? 0) > MAX_BYTES[kind]) throw tooLarge(kind, param);
    },

    /**
     * The provider's id for the media on the sending number, uploading the bytes the first time and
     * again once the provider is about to forget the id. Called by the send job outside any
     * transaction; provider failures propagate as `ProviderError` for the job to judge.
     */
    async providerSourceFor(organizationId: string, mediaId: string, connection: { id: string; credentials: ProviderCredentials }): Promise<MediaSource> {
      const row = await store.find(db, organizationId, mediaId);
      if (!row) throw notFound();
      assertReady(row, null);
      const now = clock.now();
      const cached = await store.findUpload(db, mediaId, connection.id);
      if (cached && new Date(cached.expires_at).getTime() - REUPLOAD_MARGIN_MS > now.getTime()) return { id: cached.provider_media_id };
      // The port takes the bytes whole (at most 100 MB, a document's limit).
      const bytes = await buffer(await storage.get(row.storage_key!));
      const uploaded = await provider.uploadMedia(connection.credentials, {
        bytes,
        mimeType: row.mime_type,
        ...(row.filename ? { filename: row.filename } : {}),
      });
      await store.saveUpload(db, {
        media_id: mediaId,
        connection_id: connection.id,
        provider_media_id: uploaded.providerMediaId,
        expires_at: new Date(now.getTime() + PROVIDER_MEDIA_TTL_MS).toISOString(),
        created_at: now.toISOString(),
      });
      return { id: uploaded.providerMediaId };
    },

    /**
     * Files a media a customer sent, inside the inbound message's transaction: a `pending` row and
     * the `media.fetch` job that brings its bytes over. The same provider media on the same number
     * answers the same id, however often its webhook arrives. `kind` is the message's type; without
     * it, the MIME type decides (a type the provider does not send out makes a document).
     */
    async adoptInbound(
      trx: Trx,
      input: {
        organizationId: string;
        connectionId: string;
        providerMediaId: string;
        mimeType: string | undefined;
        sha256: string | undefined;
        filename: string | undefined;
        kind?: MediaKind;
      },
    ): Promise<string> {
      const existing = await store.findInbound(trx, input.connectionId, input.providerMediaId);
      if (existing) return existing.id;
      const now = clock.now();
      const mimeType = input.mimeType ? baseMimeType(input.mimeType) : GENERIC_MIME_TYPE;
      const row: MediaTable = {
        id: newId('media', now.getTime()),
        organization_id: input.organizationId,
        connection_id: input.connectionId,
        source: 'inbound',
        status: 'pending',
        kind: input.kind ?? kindOf(mimeType) ?? 'document',
        mime_type: mimeType,
        size: null,
        sha256: null,
        filename: safeFilename(input.filename),
        storage_key: null,
        provider_media_id: input.providerMediaId,
        provider_sha256: input.sha256 ?? null,
        failure_reason: null,
        metadata: '{}',
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      };
      // A concurrent delivery of the same webhook may have filed it between the read and the insert.
      if (!(await store.insertInboundIfAbsent(trx, row))) return (await store.findInbound(trx, input.connectionId, input.providerMediaId))!.id;
      await queue.enqueue(trx, mediaFetch, { media_id: row.id });
      return row.id;
    },

    /**
     * The `media.fetch` job: downloads a pending inbound media into the storage and marks it ready,
     * or failed once retrying cannot help or the last attempt failed.
     */
    async fetchInbound(mediaId: string, attempt: { attempt: number; maxAttempts: number; signal?: AbortSignal }): Promise<void> {
      const row = await store.findById(db, mediaId);
      if (!row || row.status !== 'pending' || row.connection_id === null || row.provider_media_id === null) return;
      try {
        const access = await connections.providerAccessForWork(row.connection_id);
        const downloaded = await provider.downloadMedia(access.credentials, row.provider_media_id, { maxBytes: LARGEST_MEDIA_BYTES });
        // An attempt that timed out must not go on holding the provider's connection.
        attempt.signal?.addEventListener('abort', () => downloaded.stream.destroy(attempt.signal!.reason as Error), { once: true });
        const stored = await storage.put(row.id, downloaded.stream);
        if (row.provider_sha256 !== null && digestContradicts(row.provider_sha256, stored.sha256)) {
          await storage.delete(row.id);
          throw new Error('The bytes downloaded do not match the SHA-256 the provider announced.');
        }
        const mimeType = row.mime_type === GENERIC_MIME_TYPE && downloaded.mimeType ? baseMimeType(downloaded.mimeType) : row.mime_type;
        await db.transaction().execute(async (trx) => {
          const updated = await store.updatePending(trx, row.id, {
            status: 'ready',
            mime_type: mimeType,
            size: stored.size,
            sha256: stored.sha256,
            storage_key: row.id,
            updated_at: clock.now().toISOString(),
          });
          if (!updated) return;
          for (const listener of storedListeners) {
            await listener(trx, { organizationId: row.organization_id, connectionId: row.connection_id, bytes: stored.size, test: false });
          }
        });
      } catch (error) {
        if (isProviderError(error)) await connections.reportProviderError(row.connection_id, error);
        if (!isRetryable(error) || attempt.attempt >= attempt.maxAttempts) await markFailed(row, error instanceof Error ? error.message : String(error));
        throw error;
      }
    },
  };
}

export type MediaService = ReturnType<typeof createMediaService>;
