import Type, { type Static } from 'typebox';
import { Id, Metadata, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { MEDIA_KINDS } from '../../provider/provider.schemas.ts';

export const MEDIA_SOURCES = ['upload', 'inbound'] as const;
export type MediaSource = (typeof MEDIA_SOURCES)[number];

export const MEDIA_STATUSES = ['pending', 'ready', 'failed'] as const;
export type MediaStatus = (typeof MEDIA_STATUSES)[number];

export const MediaSchema = Type.Object({
  id: Id('media'),
  object: Type.Literal('media'),
  kind: Type.Enum(MEDIA_KINDS, { description: 'What the file can be sent as; follows from its MIME type (`image/webp` is a sticker).' }),
  mime_type: Type.String({ description: 'Without parameters, lower case. For inbound media, `application/octet-stream` until the provider says.' }),
  size: Nullable(Type.Integer({ minimum: 1 }), { description: 'Bytes; null until the bytes are here.' }),
  sha256: Nullable(Type.String({ pattern: '^[0-9a-f]{64}$' }), {
    description: 'Lower-case hex SHA-256 of the bytes (also the download’s ETag); null until the bytes are here.',
  }),
  filename: Nullable(Type.String(), { description: 'As the uploader or the customer named the file, made safe; null when none was given.' }),
  connection_id: Nullable(Id('connection'), {
    description: 'The number it came in on (inbound), or the connection of the connection key that uploaded it; null for an upload of the whole organization.',
  }),
  source: Type.Enum(MEDIA_SOURCES, { description: '`upload` (`POST /v1/media`) or `inbound` (a customer sent it).' }),
  status: Type.Enum(MEDIA_STATUSES, {
    description:
      '`ready`: the bytes are here. `pending`: inbound media still being fetched from the provider. `failed`: the fetch gave up; the bytes are gone.',
  }),
  failure_reason: Nullable(Type.String(), { description: 'Why the fetch failed, when `status` is `failed`.' }),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Media = Static<typeof MediaSchema>;

/**
 * The upload form as the route has parsed it. `file` stands for the file part, whose bytes are
 * already stored by then: its value is their SHA-256, so the Idempotency-Key's request hash covers
 * the file without holding it in memory. Documented as the form a client sends.
 */
export const UploadMediaForm = Strict({
  file: Type.String({
    contentMediaType: 'application/octet-stream',
    description: 'The file, as the last part of the form. Its part `Content-Type` is its MIME type unless `type` says otherwise.',
  }),
  type: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'The MIME type, overriding the file part’s `Content-Type` (for clients that send `application/octet-stream`).',
    }),
  ),
  metadata: Type.Optional(Metadata),
});
export type UploadMediaFields = Static<typeof UploadMediaForm>;
