/**
 * Media bytes as objects in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2…), which every api and
 * worker process reaches whatever machine it runs on. Imported only when MEDIA_STORAGE_URL names a
 * bucket (`openMediaStorage` in index.ts): the SDK adds some 35 MiB to a process.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import type { MediaStorageConfig } from '../../config/config.ts';
import { AppError } from '../../lib/errors.ts';
import { checkKey, type MediaStorage } from './media-storage.ts';

export type S3Location = Omit<Extract<MediaStorageConfig, { kind: 's3' }>, 'kind'>;

/**
 * S3 takes a body of unknown length only in parts of at least 5 MiB (but the last), so an upload
 * holds at most one part in memory: a file smaller than that is one PutObject, a larger one a
 * multipart upload whose parts are sent as they fill.
 */
export const PART_BYTES = 5 * 1024 * 1024;

/**
 * How long one call may wait for its answer, its retries included. Only the answer: a download's
 * body then streams for as long as the client reading it needs (a socket timeout would cut a slow
 * reader off mid-file, so none is set).
 */
const ANSWER_TIMEOUT_MS = 60_000;

export function createS3Client(location: S3Location): S3Client {
  return new S3Client({
    region: location.region,
    forcePathStyle: location.forcePathStyle,
    // Without credentials in the URL, the SDK's default chain finds them (environment, profile, role).
    ...(location.credentials ? { credentials: location.credentials } : {}),
    ...(location.endpoint
      ? {
          endpoint: location.endpoint,
          // Many S3-compatible servers refuse the SDK's newer default checksum headers; SigV4 still
          // signs each request, and the service checks the SHA-256 it computes itself.
          requestChecksumCalculation: 'WHEN_REQUIRED' as const,
          responseChecksumValidation: 'WHEN_REQUIRED' as const,
        }
      : {}),
    requestHandler: { connectionTimeout: 5_000 },
  });
}

/** Objects named `<prefix><key>` in `bucket`, through `client`, which the storage closes. */
export function createS3MediaStorage(client: S3Client, location: Pick<S3Location, 'bucket' | 'prefix'>): MediaStorage {
  const Bucket = location.bucket;
  const objectKey = (key: string) => location.prefix + checkKey(key);

  const isMissing = (error: unknown) => error instanceof Error && error.name === 'NoSuchKey';

  /**
   * One call to the object store, bounded in time. Anything but a missing key (which callers read as
   * such) is the store failing the service: an unreachable endpoint, a bucket that does not exist,
   * credentials it refuses. The request that needed it is answered `503 service_unavailable`, and
   * the store's own error is kept as the cause, which the error handler logs.
   */
  async function answered<T>(call: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`the object store did not answer within ${ANSWER_TIMEOUT_MS / 1000} s`)), ANSWER_TIMEOUT_MS);
    try {
      return await call(controller.signal);
    } catch (error) {
      if (isMissing(error)) throw error;
      throw new AppError('service_unavailable', 'The media storage could not be reached or refused the request; retry shortly.', {
        headers: { 'retry-after': '30' },
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    async put(key, content) {
      const Key = objectKey(key);
      const hash = createHash('sha256');
      let size = 0;
      let part: Uint8Array[] = [];
      let partBytes = 0;
      let multipart: { UploadId: string; parts: CompletedPart[] } | undefined;

      async function sendPart(): Promise<void> {
        if (!multipart) {
          const created = await answered((abortSignal) => client.send(new CreateMultipartUploadCommand({ Bucket, Key }), { abortSignal }));
          multipart = { UploadId: created.UploadId!, parts: [] };
        }
        const { UploadId, parts } = multipart;
        const PartNumber = parts.length + 1;
        const Body = Buffer.concat(part);
        part = [];
        partBytes = 0;
        const { ETag } = await answered((abortSignal) => client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body }), { abortSignal }));
        parts.push({ PartNumber, ETag });
      }

      try {
        // Awaiting each part inside the loop holds the source back meanwhile; leaving the loop on an
        // error destroys it, as a failed pipeline does.
        for await (const chunk of content as AsyncIterable<Uint8Array>) {
          hash.update(chunk);
          size += chunk.length;
          part.push(chunk);
          partBytes += chunk.length;
          if (partBytes >= PART_BYTES) await sendPart();
        }
        if (!multipart) {
          const Body = Buffer.concat(part);
          await answered((abortSignal) => client.send(new PutObjectCommand({ Bucket, Key, Body }), { abortSignal }));
        } else {
          if (partBytes > 0) await sendPart();
          const { UploadId, parts } = multipart;
          await answered((abortSignal) =>
            client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }), { abortSignal }),
          );
        }
      } catch (error) {
        // Nothing is visible under the key until the upload completes; aborting frees the parts sent.
        // Should the abort fail too, the caller still gets the first error, and a bucket lifecycle
        // rule (docs/media.md) removes the parts left over.
        if (multipart) {
          const { UploadId } = multipart;
          await answered((abortSignal) => client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }), { abortSignal })).catch(() => {});
        }
        throw error;
      }
      return { size, sha256: hash.digest('hex') };
    },

    async get(key) {
      const Key = objectKey(key);
      let Body: unknown;
      try {
        ({ Body } = await answered((abortSignal) => client.send(new GetObjectCommand({ Bucket, Key }), { abortSignal })));
      } catch (error) {
        if (isMissing(error)) throw Object.assign(new Error(`ENOENT: no media stored under s3://${Bucket}/${Key}`), { code: 'ENOENT' });
        throw error;
      }
      if (!(Body instanceof Readable)) throw new Error('the S3 client answered a body that is not a Node.js stream');
      return Body;
    },

    async delete(key) {
      const Key = objectKey(key);
      try {
        await answered((abortSignal) => client.send(new DeleteObjectCommand({ Bucket, Key }), { abortSignal }));
      } catch (error) {
        // S3 answers 204 for a missing key; some compatible servers answer NoSuchKey instead.
        if (!isMissing(error)) throw error;
      }
    },

    async isReachable() {
      try {
        await answered((abortSignal) => client.send(new HeadBucketCommand({ Bucket }), { abortSignal }));
        return true;
      } catch {
        return false;
      }
    },

    async close() {
      client.destroy();
    },
  };
}

export function openS3MediaStorage(location: S3Location): MediaStorage {
  return createS3MediaStorage(createS3Client(location), location);
}
