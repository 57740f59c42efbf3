import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A body of `size` bytes written 64 KiB at a time, with a pause between writes: an upload still under
 * way when the server has seen enough to refuse it, which is the scenario (a client on a slow link).
 * `progress.sent` counts the bytes the connection asked for: short of `size` when it was closed under
 * the upload.
 */
export function slowUpload(size: number) {
  const progress = { sent: 0 };
  async function* chunks() {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    for (let offset = 0; offset < size; offset += chunk.length) {
      if (offset > 0) await sleep(5);
      const part = chunk.subarray(0, Math.min(chunk.length, size - offset));
      progress.sent += part.length;
      yield part;
    }
  }
  return { body: Readable.from(chunks()), progress };
}
