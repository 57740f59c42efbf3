import multipart from '@fastify/multipart';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import Type from 'typebox';
import { requirePrincipal, type Access } from '../../http/access.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { AppError, invalidParam } from '../../lib/errors.ts';
import { LARGEST_MEDIA_BYTES } from './media-types.ts';
import { MediaSchema, UploadMediaForm, type UploadMediaFields } from './media.schemas.ts';
import type { MediaService, StagedUpload } from './media.service.ts';

const tags = ['Media'];
const read: Access = { scope: 'messages:read' };
const write: Access = { scope: 'messages:write' };

/**
 * One file and a few small fields. The file's own limit is the largest kind's plus one byte, so the
 * service's per-kind check (which names the kind) always fires first.
 */
const MULTIPART_LIMITS = { files: 1, fields: 8, parts: 10, fieldNameSize: 100, fieldSize: 64 * 1024, headerPairs: 20, fileSize: LARGEST_MEDIA_BYTES + 1 };

const FORM_HELP = 'POST /v1/media takes a multipart/form-data body with the file in a part named `file` (after the `type` and `metadata` fields, if any).';

function malformed(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const code = (error as { code?: unknown }).code;
  if (code === 'FST_FILES_LIMIT') return invalidParam('/file', 'must be the only file of the form', 'too_many');
  if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT')
    return new AppError('validation_failed', `The form has more parts than the ${MULTIPART_LIMITS.parts} an upload takes. ${FORM_HELP}`, { cause: error });
  const reason = error instanceof Error ? error.message : String(error);
  return new AppError('validation_failed', `The body is not valid multipart/form-data (${reason}). ${FORM_HELP}`, { cause: error });
}

/** A file part's bytes, its parse failures (a truncated body, say) reported as the client's. */
async function* bytesOf(file: Readable): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of file) yield chunk as Uint8Array;
  } catch (error) {
    throw malformed(error);
  }
}

/** A field's value: text, or JSON for `metadata` (parsed already when its part said application/json). */
function fieldValue(name: string, value: unknown): unknown {
  if (name !== 'metadata' || typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw invalidParam('/metadata', 'must be a JSON object', 'invalid_type');
  }
}

/**
 * An upload's bytes are stored before its row exists (the Idempotency-Key's hash needs their
 * SHA-256), so each request tracks whether its upload became a media; when its response is over,
 * one that did not (refused, replayed, or abandoned by the client) is dropped.
 */
interface Upload {
  staged: StagedUpload;
  state: 'staged' | 'creating' | 'kept' | 'discarded';
}

function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag.replace(/^W\//, '') === etag;
  });
}

/** `attachment`, with an ASCII fallback name and the exact one in RFC 5987 form for clients that read it. */
function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const exact = encodeURIComponent(filename).replace(/['()*]/g, (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${exact}`;
}

export function registerMediaRoutes(app: HttpServer, service: MediaService): void {
  const uploads = new WeakMap<FastifyRequest, Upload>();

  async function receiveForm(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!request.isMultipart()) throw new AppError('unsupported_content_type', FORM_HELP);
    const principal = requirePrincipal(request);
    const fields: Record<string, unknown> = {};
    let upload: Upload | undefined;
    const parts = request.parts({ limits: MULTIPART_LIMITS });
    try {
      for (;;) {
        const next = await parts.next().catch((error: unknown) => Promise.reject(malformed(error)));
        if (next.done) break;
        const part = next.value;
        const pointer = `/${part.fieldname}`;
        // The checks on the bytes depend on `type`, so fields that come after the file come too late.
        if (upload) throw invalidParam(pointer, 'must come before the file part', 'invalid');
        if (Object.hasOwn(fields, part.fieldname)) throw invalidParam(pointer, 'is given more than once', 'duplicate');
        if (part.type === 'field') {
          if (part.fieldnameTruncated || part.valueTruncated) throw invalidParam(pointer, 'is too long', 'too_long');
          fields[part.fieldname] = fieldValue(part.fieldname, part.value);
          continue;
        }
        if (part.fieldname !== 'file') throw invalidParam(pointer, 'is not a known field', 'unknown_field');
        const staged = await service.stage(principal, {
          declaredType: typeof fields.type === 'string' ? fields.type : undefined,
          partType: part.mimetype,
          filename: part.filename,
          content: bytesOf(part.file),
        });
        upload = { staged, state: 'staged' };
        uploads.set(request, upload);
        const kept = upload;
        reply.raw.once('close', () => {
          if (kept.state !== 'staged') return;
          kept.state = 'discarded';
          service
            .discard(kept.staged)
            .catch((error: unknown) => request.log.error({ err: error, media_id: kept.staged.id }, 'could not drop an unused upload'));
        });
      }
    } catch (error) {
      // The rest of a large body is never read: closing the connection saves receiving it.
      if (!request.raw.readableEnded) void reply.header('connection', 'close');
      throw error;
    }
    // What the schema validates and the Idempotency-Key hashes: the fields, and the file by its SHA-256.
    request.body = { ...fields, ...(upload ? { file: upload.staged.sha256 } : {}) };
  }

  void app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    // This scope takes multipart bodies only: a JSON body here is the wrong content type, not bad JSON.
    scope.removeAllContentTypeParsers();
    await scope.register(multipart, {
      limits: MULTIPART_LIMITS,
      // A part named `file` is the file even when the client gave it no file name.
      isPartAFile: (fieldName, _contentType, fileName) => fieldName === 'file' || fileName !== undefined,
    });
    scope.addContentTypeParser('*', (_request, _payload, done) => done(new AppError('unsupported_content_type', FORM_HELP), undefined));

    scope.post('/v1/media', {
      config: { access: write, waitsOnNetwork: true },
      schema: {
        tags,
        summary: 'Upload a file to send in messages',
        description: `${FORM_HELP} The kind follows from the MIME type; each kind has its types and size limit (docs/media.md).`,
        consumes: ['multipart/form-data'],
        body: { content: { 'multipart/form-data': { schema: UploadMediaForm } } },
        response: { 201: MediaSchema },
      },
      preValidation: receiveForm,
      handler: async (request, reply) => {
        const upload = uploads.get(request)!;
        upload.state = 'creating';
        try {
          const media = await service.create({ principal: requirePrincipal(request), requestId: request.id }, upload.staged, {
            metadata: (request.body as UploadMediaFields).metadata,
          });
          upload.state = 'kept';
          return reply.code(201).send(media);
        } catch (error) {
          upload.state = 'discarded';
          await service.discard(upload.staged);
          throw error;
        }
      },
    });

    scope.get('/v1/media/:id', {
      config: { access: read },
      schema: { tags, summary: 'Get a media', params: PathId('media'), response: { 200: MediaSchema } },
      handler: async (request) => service.get(requirePrincipal(request), request.params.id),
    });

    scope.get('/v1/media/:id/download', {
      config: { access: read },
      schema: {
        tags,
        summary: "Download a media's bytes",
        description:
          'The bytes with their Content-Type and an ETag (the SHA-256); 409 `invalid_state` while an inbound media is still being fetched, 410 `media_expired` once its fetch failed.',
        params: PathId('media'),
        response: {
          200: {
            description: 'The bytes.',
            content: { 'application/octet-stream': { schema: Type.Unsafe<Readable>({ type: 'string', contentMediaType: 'application/octet-stream' }) } },
          },
          304: Type.Unsafe<undefined>({ description: 'Not modified: the `If-None-Match` ETag is current.' }),
        },
      },
      handler: async (request, reply) => {
        const { media, content } = await service.open(requirePrincipal(request), request.params.id);
        const etag = `"${media.sha256}"`;
        void reply
          .header('etag', etag)
          // The bytes of a media id never change, and only credentials of the organization may read them.
          .header('cache-control', 'private, max-age=86400, immutable');
        if (ifNoneMatch(request.headers['if-none-match'], etag)) {
          content.destroy();
          return reply.code(304).send();
        }
        return reply
          .header('content-type', media.mime_type)
          .header('content-length', String(media.size))
          .header('content-disposition', contentDisposition(media.filename ?? media.id))
          .header('x-content-type-options', 'nosniff')
          .send(content);
      },
    });
  });
}
