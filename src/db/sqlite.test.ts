import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { migrateToLatest, openStore } from './connect.ts';
import { terminateCheckpointThread } from './sqlite-checkpoints.ts';
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

// An interval long enough that the timer cannot run during a test: the rounds are asked for.
const onThread = (boundPages: number) => ({ intervalMs: 3_600_000, boundPages, threadAfterPages: 0 });
const onEventLoop = (boundPages: number, threadAfterPages: number) => ({ intervalMs: 3_600_000, boundPages, threadAfterPages });

/** Closes, and waits for the checkpoint thread to let go of the file before the directory goes. */
async function closed(db: NodeSqliteDatabase): Promise<void> {
  db.close();
  await db.whenClosed();
}

/** Writes `count` rows of about a page each, each in its own commit, as requests would. */
function write(db: NodeSqliteDatabase, count: number): void {
  const insert = db.prepare('insert into filler (body) values (?)');
  for (let index = 0; index < count; index++) insert.run([`${index}`.padEnd(3000, 'x')]);
}

describe('the node:sqlite adapter: WAL checkpoints off the request path', () => {
  it('leaves checkpoints to its thread: the WAL grows past SQLite’s automatic 1,000 pages between rounds', async (t) => {
    const file = tempFile(t);
    const db = new NodeSqliteDatabase(file, onThread(100_000));
    t.after(() => closed(db));
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    write(db, 1500);
    assert.ok(walPages(file) > 1000, `the WAL holds ${walPages(file)} pages`);
    const result = await db.checkpoint();
    assert.equal(result?.busy, 0);
    assert.equal(result?.checkpointed, result?.log, 'a passive round copies every page when nothing else holds the database');
  });

  it('truncates the WAL once it passes the bound', async (t) => {
    const file = tempFile(t);
    const db = new NodeSqliteDatabase(file, onThread(200));
    t.after(() => closed(db));
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    write(db, 30);
    assert.ok((await db.checkpoint())!.log > 0, 'under the bound, a passive round leaves the file as it is');
    assert.ok(walPages(file) > 0);
    write(db, 300);
    assert.equal((await db.checkpoint())?.log, 0);
    assert.equal(walPages(file), 0);
  });

  it('checkpoints what is committed while the request connection holds a transaction open', async (t) => {
    const file = tempFile(t);
    const db = new NodeSqliteDatabase(file, onThread(100_000));
    t.after(() => closed(db));
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    write(db, 20);
    db.prepare('begin immediate').run([]);
    write(db, 10);
    const during = await db.checkpoint();
    assert.equal(during?.busy, 0);
    assert.ok(during.checkpointed > 0, 'the committed pages are copied during the transaction');
    db.prepare('commit').run([]);
    assert.equal((await db.checkpoint())?.busy, 0);
    assert.equal((db.prepare('select count(*) as n from filler').all([])[0] as { n: number }).n, 30);
  });

  it('stops its rounds on close', async (t) => {
    const db = new NodeSqliteDatabase(tempFile(t), onThread(100_000));
    assert.equal(db.checkpointing, true);
    await closed(db);
    assert.equal(db.checkpointing, false);
    assert.equal(await db.checkpoint(), undefined);
  });

  it('serves several files from one thread, each with its own rounds', async (t) => {
    const files = [tempFile(t), tempFile(t)];
    const dbs = files.map((file) => new NodeSqliteDatabase(file, onThread(50)));
    t.after(() => Promise.all(dbs.map(closed)));
    for (const db of dbs) db.prepare('create table filler (id integer primary key, body text)').run([]);
    write(dbs[0]!, 100);
    write(dbs[1]!, 10);
    assert.equal((await dbs[0]!.checkpoint())?.log, 0, 'past its bound: truncated');
    assert.ok((await dbs[1]!.checkpoint())!.log > 0, 'under its bound: left');
    assert.equal(walPages(files[0]!), 0);
    assert.ok(walPages(files[1]!) > 0);
  });

  it('a checkpoint thread that ends is replaced, and the new one checkpoints every open file', async (t) => {
    const file = tempFile(t);
    const db = new NodeSqliteDatabase(file, onThread(50));
    t.after(() => closed(db));
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    await terminateCheckpointThread();
    write(db, 100);
    assert.equal((await db.checkpoint())?.log, 0, 'the new thread knows the file and truncates its WAL');
    assert.equal(walPages(file), 0);
  });

  it('checkpoints on the event loop while the WAL stays small, and moves to the thread once it has not', async (t) => {
    const file = tempFile(t);
    const db = new NodeSqliteDatabase(file, onEventLoop(100_000, 200));
    t.after(() => closed(db));
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    assert.equal(db.checkpointing, true);
    write(db, 20);
    assert.equal((await db.checkpoint())?.busy, 0);
    assert.equal(db.checkpointsOnThread, false, 'a round of 20 pages stays on the event loop');
    write(db, 300);
    const large = await db.checkpoint();
    assert.equal(db.checkpointsOnThread, true, 'a WAL of 300 pages moves the rounds to the thread');
    assert.ok(large!.log > 200, `the thread ran that round: it found ${large?.log} pages`);
    write(db, 10);
    assert.equal((await db.checkpoint())?.busy, 0, 'the thread answers the next round');
  });

  it('starts with an empty WAL after migrating a new file, so that the migrations alone never start the thread', async (t) => {
    const file = tempFile(t);
    const store = openStore({ sqliteFile: file });
    t.after(() => store.close());
    await migrateToLatest(store);
    assert.equal(statSync(`${file}-wal`).size, 0);
    await migrateToLatest(store);
    assert.equal(statSync(`${file}-wal`).size, 0, 'nothing to apply writes nothing');
  });

  it('skips an event-loop round that falls inside an open transaction, and checkpoints after it', async (t) => {
    const db = new NodeSqliteDatabase(tempFile(t), onEventLoop(100_000, 100_000));
    t.after(() => closed(db));
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    db.prepare('begin immediate').run([]);
    write(db, 10);
    assert.equal(await db.checkpoint(), undefined);
    db.prepare('commit').run([]);
    assert.equal((await db.checkpoint())?.busy, 0);
  });

  it('keeps SQLite’s own checkpoints where there is no WAL (an in-memory store)', () => {
    const db = new NodeSqliteDatabase(':memory:');
    assert.equal(db.checkpointing, false);
    db.close();
  });
});

describe('the node:sqlite adapter: rows', () => {
  it('makes rows of the statement’s columns, whatever their names, as objects of one shape', () => {
    const db = new NodeSqliteDatabase(':memory:');
    try {
      db.prepare(`create table odd ("__proto__" text, "a""b" text, "x y" integer, "toString" text, plain blob)`).run([]);
      db.prepare('insert into odd values (?, ?, ?, ?, ?)').run(['not a prototype', 'quoted', 7, 'shadow', new Uint8Array([1, 2])]);
      db.prepare('insert into odd values (?, ?, ?, ?, ?)').run([null, 'second', null, null, null]);
      const rows = db.prepare('select * from odd order by rowid').all([]) as Record<string, unknown>[];
      assert.deepEqual(Object.keys(rows[0]!), ['__proto__', 'a"b', 'x y', 'toString', 'plain']);
      assert.equal(Object.getPrototypeOf(rows[0]), Object.prototype, 'a column named __proto__ stays a column');
      assert.equal(Object.getOwnPropertyDescriptor(rows[0], '__proto__')?.value, 'not a prototype');
      assert.equal(rows[0]!['a"b'], 'quoted');
      assert.equal(rows[0]!['x y'], 7);
      assert.equal(rows[0]!.toString, 'shadow');
      assert.deepEqual(rows[0]!.plain, new Uint8Array([1, 2]));
      assert.deepEqual(rows[1], { ['__proto__']: null, 'a"b': 'second', 'x y': null, toString: null, plain: null });
      // Of two result columns with one name the later wins, as node:sqlite's own objects have it.
      assert.deepEqual(db.prepare(`select 1 as n, 2 as n`).all([]), [{ n: 2 }]);
      assert.deepEqual([...db.prepare('select "x y" from odd order by rowid').iterate([])], [{ 'x y': 7 }, { 'x y': null }]);
      // A write without a result keeps node:sqlite's answer.
      assert.equal(db.prepare('update odd set "x y" = 1').run([]).changes, 2);
    } finally {
      db.close();
    }
  });
});
