/**
 * Where media bytes live. The database holds what the service knows about a file; the bytes go to a
 * blob store behind this small interface, so that a deployment of several machines can swap the
 * local directory for shared storage (an object store) without touching the rules above it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { access, constants, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface StoredBlob {
  size: number;
  /** Lower-case hex SHA-256 of the bytes stored. */
  sha256: string;
}

export interface MediaStorage {
  /**
   * Stores the bytes under `key`, all or nothing: a reader never sees a partial file, and a failed
   * or aborted write leaves nothing behind. Rejects with the content's own error if it fails.
   */
  put(key: string, content: Readable | AsyncIterable<Uint8Array>): Promise<StoredBlob>;
  /** The bytes under `key`; rejects with an error whose `code` is `ENOENT` if there are none. */
  get(key: string): Promise<Readable>;
  /** Removes the bytes; a key that holds nothing is not an error. */
  delete(key: string): Promise<void>;
  /** Whether bytes can be stored now (for `/readyz`): the directory is writable, the bucket answers. */
  isReachable(): Promise<boolean>;
  /** Releases what the storage holds open (an object store's connections), once the server has stopped. */
  close(): Promise<void>;
}

/**
 * Keys are minted by the service (media ids), never taken from a request; the pattern still refuses
 * anything that could climb out of the directory should that ever change.
 */
const KEY = /^[A-Za-z0-9_-]{1,128}$/;

export function checkKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`invalid media storage key: ${JSON.stringify(key)}`);
  return key;
}

/**
 * Files under `directory`, spread over subfolders named by the key's last two characters (ids end in
 * random characters) so that no folder grows to millions of entries. A write goes to `tmp/` first
 * and is renamed into place once flushed to disk, which is atomic within one file system.
 */
export function createFileMediaStorage(directory: string): MediaStorage {
  const tmp = path.join(directory, 'tmp');
  const fileOf = (key: string) => path.join(directory, checkKey(key).slice(-2), key);

  return {
    async put(key, content) {
      const target = fileOf(key);
      const partial = path.join(tmp, `${key}.${randomBytes(6).toString('hex')}.part`);
      await mkdir(tmp, { recursive: true });
      const hash = createHash('sha256');
      let size = 0;
      const measure = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          size += chunk.length;
          hash.update(chunk);
          done(null, chunk);
        },
      });
      try {
        await pipeline(content, measure, createWriteStream(partial, { flags: 'wx', flush: true }));
        await mkdir(path.dirname(target), { recursive: true });
        await rename(partial, target);
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
      return { size, sha256: hash.digest('hex') };
    },

    async get(key) {
      // Opened here rather than lazily by the stream, so a missing file rejects before a response starts.
      const handle = await open(fileOf(key), 'r');
      return handle.createReadStream();
    },

    async delete(key) {
      await rm(fileOf(key), { force: true });
    },

    async isReachable() {
      try {
        await mkdir(tmp, { recursive: true });
        await access(tmp, constants.W_OK);
        return true;
      } catch {
        return false;
      }
    },

    async close() {},
  };
}
