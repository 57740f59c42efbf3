import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { NodeSqliteDatabase } from './sqlite.ts';

function tempFile(t: TestContext): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sqlite-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'test.sqlite');
}

function walPages(file: string): number {
  try {
    // The WAL's header is 32 bytes; each frame is a 24-byte header and a 4 KiB page.
    return Math.max(0, Math.floor((statSync(`${file}-wal`).size - 32) / (24 + 4096)));
  } catch {
    return 0;
  }
}

/** Writes `count` rows of about a page each, each in its own commit, as requests would. */
function write(db: NodeSqliteDatabase, count: number): void {
  const insert = db.prepare('insert into filler (body) values (?)');
  for (let index = 0; index < count; index++) insert.run([`${index}`.padEnd(3000, 'x')]);
}

describe('the node:sqlite adapter: WAL checkpoints', () => {
  it('leaves checkpoints to its timer: the WAL grows past SQLite’s automatic 1,000 pages between rounds', (t) => {
    const file = tempFile(t);
    // An interval long enough that the timer cannot run during the test: the rounds are called by hand.
    const db = new NodeSqliteDatabase(file, { intervalMs: 3_600_000, boundPages: 100_000 });
    t.after(() => db.close());
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    write(db, 1500);
    assert.ok(walPages(file) > 1000, `the WAL holds ${walPages(file)} pages`);
    const result = db.checkpoint();
    assert.equal(result?.busy, 0);
    assert.equal(result?.checkpointed, result?.log, 'a passive round copies every page when nothing else holds the database');
  });

  it('truncates the WAL once it passes the bound', (t) => {
    const file = tempFile(t);
    const db = new NodeSqliteDatabase(file, { intervalMs: 3_600_000, boundPages: 200 });
    t.after(() => db.close());
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    write(db, 30);
    assert.ok(db.checkpoint()!.log > 0, 'under the bound, a passive round leaves the file as it is');
    assert.ok(walPages(file) > 0);
    write(db, 300);
    assert.equal(db.checkpoint()?.log, 0);
    assert.equal(walPages(file), 0);
  });

  it('skips a round that falls inside an open transaction, and checkpoints after it', (t) => {
    const file = tempFile(t);
    const db = new NodeSqliteDatabase(file, { intervalMs: 3_600_000, boundPages: 100_000 });
    t.after(() => db.close());
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    db.prepare('begin immediate').run([]);
    write(db, 10);
    assert.equal(db.checkpoint(), undefined);
    db.prepare('commit').run([]);
    assert.equal(db.checkpoint()?.busy, 0);
  });

  it('stops its timer on close', (t) => {
    const db = new NodeSqliteDatabase(tempFile(t), { intervalMs: 3_600_000, boundPages: 100_000 });
    assert.equal(db.checkpointing, true);
    db.close();
    assert.equal(db.checkpointing, false);
    assert.equal(db.checkpoint(), undefined);
  });

  it('keeps SQLite’s own checkpoints where there is no timer (an in-memory store)', () => {
    const db = new NodeSqliteDatabase(':memory:');
    assert.equal(db.checkpointing, false);
    db.close();
  });
});
