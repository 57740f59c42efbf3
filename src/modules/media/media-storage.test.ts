import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { after, describe, it } from 'node:test';
import { createFileMediaStorage } from './media-storage.ts';

describe('the file media storage', () => {
  const directory = mkdtempSync(path.join(tmpdir(), 'media-storage-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  const storage = createFileMediaStorage(directory);
  const files = () =>
    readdirSync(directory, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => entry.name);

  it('stores the bytes, answering their size and SHA-256, and gives them back', async () => {
    const bytes = Buffer.from('hello media');
    const stored = await storage.put(
      'med_01ABC',
      (async function* () {
        yield bytes.subarray(0, 5);
        yield bytes.subarray(5);
      })(),
    );
    assert.deepEqual(stored, { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
    assert.ok((await buffer(await storage.get('med_01ABC'))).equals(bytes));
  });

  it('a write that fails part way leaves nothing, not even a partial file', async () => {
    const failing = (async function* () {
      yield Buffer.from('partial');
      throw new Error('the client went away');
    })();
    await assert.rejects(storage.put('med_01FAIL', failing), /the client went away/);
    assert.ok(!files().some((name) => name.includes('FAIL')));
    await assert.rejects(storage.get('med_01FAIL'), { code: 'ENOENT' });
  });

  it('delete removes the bytes, and deleting nothing is fine', async () => {
    await storage.put('med_01DEL', Readable.from([Buffer.from('x')]));
    await storage.delete('med_01DEL');
    await assert.rejects(storage.get('med_01DEL'), { code: 'ENOENT' });
    await storage.delete('med_01DEL');
  });

  it('refuses keys that could leave the directory', async () => {
    for (const key of ['../escape', 'a/b', '', '.']) {
      await assert.rejects(storage.put(key, Readable.from([Buffer.from('x')])), /invalid media storage key/);
    }
  });
});
