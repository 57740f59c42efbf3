import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pathToFileURL } from 'node:url';
import { before, describe, it } from 'node:test';
import { loadConfig } from '../../config/config.ts';
import { suiteScope, type Scope } from '../../../test/harness.ts';
import { startLocalS3, type LocalS3 } from '../../../test/local-s3.ts';
import type { AppError } from '../../lib/errors.ts';
import { openMediaStorage, type MediaStorage } from './index.ts';
import { createS3Client, createS3MediaStorage, PART_BYTES } from './media-storage-s3.ts';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The bytes in chunks of at most 1 MiB, as an upload arrives; then `failure`, if given. */
async function* chunks(bytes: Buffer, failure?: Error): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += 1024 * 1024) yield bytes.subarray(at, at + 1024 * 1024);
  if (failure) throw failure;
}

/** Bytes that differ at every offset that matters: a part sent twice or out of order would show. */
function pattern(size: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let at = 0; at + 4 <= size; at += 4) bytes.writeUInt32BE(at, at);
  return bytes;
}

/**
 * Each backend opened as the service opens it, from a MEDIA_STORAGE_URL, with the names of what it
 * holds (file names, object keys), so that the same tests prove the same promises of both.
 */
const backends: { name: string; open(scope: Scope): Promise<{ storage: MediaStorage; stored(): Promise<string[]> }> }[] = [
  {
    name: 'file',
    async open(scope) {
      const directory = mkdtempSync(path.join(tmpdir(), 'media-storage-'));
      scope.after(() => rmSync(directory, { recursive: true, force: true }));
      const storage = await openMediaStorage(loadConfig({ MEDIA_STORAGE_URL: pathToFileURL(directory).href }).mediaStorage);
      const stored = async () =>
        readdirSync(directory, { recursive: true, withFileTypes: true })
          .filter((entry) => entry.isFile())
          .map((entry) => entry.name);
      return { storage, stored };
    },
  },
  {
    name: 'S3',
    async open(scope) {
      const s3 = await startLocalS3(scope);
      const storage = await openMediaStorage(loadConfig({ MEDIA_STORAGE_URL: s3.url('media') }).mediaStorage);
      return { storage, stored: () => s3.keys() };
    },
  },
];

for (const backend of backends) {
  describe(`the ${backend.name} media storage`, () => {
    const suite = suiteScope();
    let storage: MediaStorage;
    let stored: () => Promise<string[]>;
    before(async () => {
      ({ storage, stored } = await backend.open(suite));
      suite.after(() => storage.close());
    });

    it('stores the bytes, answering their size and SHA-256, and gives them back', async () => {
      const bytes = Buffer.from('hello media');
      const answer = await storage.put(
        'med_01ABC',
        (async function* () {
          yield bytes.subarray(0, 5);
          yield bytes.subarray(5);
        })(),
      );
      assert.deepEqual(answer, { size: bytes.length, sha256: sha256(bytes) });
      assert.ok((await buffer(await storage.get('med_01ABC'))).equals(bytes));
    });

    it('streams a file of several parts in and out whole, as the largest media are', async () => {
      const bytes = pattern(2 * PART_BYTES + 12_345);
      assert.deepEqual(await storage.put('med_01LARGE', chunks(bytes)), { size: bytes.length, sha256: sha256(bytes) });
      assert.ok((await buffer(await storage.get('med_01LARGE'))).equals(bytes));
    });

    it('a write that fails part way leaves nothing, not even a partial file', async () => {
      await assert.rejects(storage.put('med_01FAIL', chunks(Buffer.from('partial'), new Error('the client went away'))), /the client went away/);
      assert.ok(!(await stored()).some((name) => name.includes('FAIL')));
      await assert.rejects(storage.get('med_01FAIL'), { code: 'ENOENT' });
    });

    it('a write that fails after more than a part has gone leaves nothing either', async () => {
      const failing = chunks(pattern(PART_BYTES + 1024 * 1024), new Error('the client went away'));
      await assert.rejects(storage.put('med_01LATEFAIL', failing), /the client went away/);
      assert.ok(!(await stored()).some((name) => name.includes('LATEFAIL')));
      await assert.rejects(storage.get('med_01LATEFAIL'), { code: 'ENOENT' });
    });

    it('delete removes the bytes, and deleting nothing is fine', async () => {
      await storage.put('med_01DEL', Readable.from([Buffer.from('x')]));
      await storage.delete('med_01DEL');
      await assert.rejects(storage.get('med_01DEL'), { code: 'ENOENT' });
      await storage.delete('med_01DEL');
    });

    it('refuses keys that could leave the directory or the prefix', async () => {
      for (const key of ['../escape', 'a/b', '', '.']) {
        await assert.rejects(storage.put(key, Readable.from([Buffer.from('x')])), /invalid media storage key/);
      }
    });
  });
}

describe('the S3 media storage, as S3 sees it', () => {
  const suite = suiteScope();
  let s3: LocalS3;
  before(async () => (s3 = await startLocalS3(suite)));

  it('names each object <prefix><key>, the prefix being the URL’s path', async () => {
    const storage = await openMediaStorage(loadConfig({ MEDIA_STORAGE_URL: s3.url('tenant-a/media') }).mediaStorage);
    suite.after(() => storage.close());
    await storage.put('med_01PREFIX', Readable.from([Buffer.from('prefixed')]));
    assert.ok((await s3.keys()).includes('tenant-a/media/med_01PREFIX'));
    assert.equal((await s3.object('tenant-a/media/med_01PREFIX')).toString(), 'prefixed');
  });

  it('a write that fails after a part went up aborts its multipart upload, and fails with the content’s own error', async () => {
    const client = createS3Client(s3.location);
    const commands: string[] = [];
    client.middlewareStack.add(
      (next, context) => (args) => {
        commands.push(context.commandName!);
        return next(args);
      },
      { step: 'initialize' },
    );
    const storage = createS3MediaStorage(client, { bucket: s3.location.bucket, prefix: 'abort/' });
    suite.after(() => storage.close());
    // s3rver answers AbortMultipartUpload with 405: the content's error must come through regardless.
    await assert.rejects(storage.put('med_01ABORT', chunks(pattern(PART_BYTES + 1), new Error('the client went away'))), /the client went away/);
    assert.deepEqual(commands, ['CreateMultipartUploadCommand', 'UploadPartCommand', 'AbortMultipartUploadCommand']);
    assert.ok(!(await s3.keys()).some((key) => key.startsWith('abort/')));
  });

  it('a bucket that does not exist is the storage unavailable (its error the cause), never "nothing stored"; it is not reachable', async () => {
    const storage = createS3MediaStorage(createS3Client({ ...s3.location, bucket: 'no-such-bucket' }), { bucket: 'no-such-bucket', prefix: '' });
    suite.after(() => storage.close());
    const unavailable = (error: AppError) => error.code === 'service_unavailable' && (error.cause as Error).name === 'NoSuchBucket';
    await assert.rejects(storage.get('med_01NOBUCKET'), unavailable);
    await assert.rejects(storage.put('med_01NOBUCKET', Readable.from([Buffer.from('x')])), unavailable);
    await assert.rejects(storage.delete('med_01NOBUCKET'), unavailable);
    assert.equal(await storage.isReachable(), false);
    const real = createS3MediaStorage(createS3Client(s3.location), { bucket: s3.location.bucket, prefix: '' });
    suite.after(() => real.close());
    assert.equal(await real.isReachable(), true);
  });

  it('an endpoint that does not answer is the storage unavailable', async () => {
    const location = { ...s3.location, endpoint: 'http://127.0.0.1:9' };
    const storage = createS3MediaStorage(createS3Client(location), { bucket: location.bucket, prefix: '' });
    suite.after(() => storage.close());
    await assert.rejects(storage.put('med_01NOENDPOINT', Readable.from([Buffer.from('x')])), { code: 'service_unavailable' });
    assert.equal(await storage.isReachable(), false);
  });
});
