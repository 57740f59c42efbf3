import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { constants, DatabaseSync } from 'node:sqlite';
import { Kysely, SqliteDialect, type Dialect as KyselyDialect } from 'kysely';
import { migrateToLatest, openStore } from './connect.ts';
import { terminateCheckpointThread } from './sqlite-checkpoints.ts';
import { NodeSqliteDatabase, NodeSqliteDialect } from './sqlite.ts';

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
    const db = new NodeSqliteDatabase(file, { checkpoints: onThread(100_000) });
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
    const db = new NodeSqliteDatabase(file, { checkpoints: onThread(200) });
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
    const db = new NodeSqliteDatabase(file, { checkpoints: onThread(100_000) });
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
    const db = new NodeSqliteDatabase(tempFile(t), { checkpoints: onThread(100_000) });
    assert.equal(db.checkpointing, true);
    await closed(db);
    assert.equal(db.checkpointing, false);
    assert.equal(await db.checkpoint(), undefined);
  });

  it('serves several files from one thread, each with its own rounds', async (t) => {
    const files = [tempFile(t), tempFile(t)];
    const dbs = files.map((file) => new NodeSqliteDatabase(file, { checkpoints: onThread(50) }));
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
    const db = new NodeSqliteDatabase(file, { checkpoints: onThread(50) });
    t.after(() => closed(db));
    db.prepare('create table filler (id integer primary key, body text)').run([]);
    await terminateCheckpointThread();
    write(db, 100);
    assert.equal((await db.checkpoint())?.log, 0, 'the new thread knows the file and truncates its WAL');
    assert.equal(walPages(file), 0);
  });

  it('checkpoints on the event loop while the WAL stays small, and moves to the thread once it has not', async (t) => {
    const file = tempFile(t);
    const db = new NodeSqliteDatabase(file, { checkpoints: onEventLoop(100_000, 200) });
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
    const db = new NodeSqliteDatabase(tempFile(t), { checkpoints: onEventLoop(100_000, 100_000) });
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

/** The temporary files SQLite holds open: it unlinks them at once, so only the process's descriptors show them. */
function openTemporaryFiles(): string[] {
  const targets = readdirSync('/proc/self/fd').map((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return ''; // closed between the listing and the look
    }
  });
  return targets.filter((target) => path.basename(target).startsWith('etilqs_'));
}

describe('the node:sqlite adapter: savepoint journals', () => {
  /** 40 rows of about a page each, committed, then changed inside a savepoint: 40 pages journaled, past SQLite's 64 KiB. */
  function changeManyPagesInSavepoint(db: { exec(sql: string): void }, insert: (body: string) => void): void {
    db.exec('create table filler (body text)');
    for (let index = 0; index < 40; index++) insert(`${index}`.padEnd(3000, 'x'));
    db.exec(`begin immediate; savepoint member; update filler set body = body || 'y'`);
  }

  it('keeps them in memory, where SQLite would move a large one to a temporary file', (t) => {
    // Without the adapter's pragma the same work opens a temporary file: the check below can fail.
    const bare = new DatabaseSync(tempFile(t));
    bare.exec('PRAGMA journal_mode = WAL');
    changeManyPagesInSavepoint(bare, (body) => bare.prepare('insert into filler (body) values (?)').run(body));
    assert.equal(openTemporaryFiles().length, 1);
    bare.exec('rollback');
    bare.close();

    const db = new NodeSqliteDatabase(tempFile(t), { checkpoints: onEventLoop(100_000, 100_000) });
    t.after(() => closed(db));
    const exec = (sql: string) => {
      for (const statement of sql.split(';')) db.prepare(statement).run([]);
    };
    changeManyPagesInSavepoint({ exec }, (body) => db.prepare('insert into filler (body) values (?)').run([body]));
    assert.deepEqual(openTemporaryFiles(), []);
    // The journal in memory still undoes the savepoint.
    exec('rollback to savepoint member; release savepoint member; commit');
    const rows = db.prepare(`select count(*) as changed from filler where body like '%y'`).all([]) as { changed: number }[];
    assert.deepEqual(rows, [{ changed: 0 }]);
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

describe('the node:sqlite adapter: statements compiled once', () => {
  interface Items {
    items: { id: string; list: string };
  }

  /** The SQL a Kysely dialect writes for a page of a list, and for a first match. */
  function compiledSql(dialect: KyselyDialect): { page: string; first: string } {
    const db = new Kysely<Items>({ dialect });
    const page = db.selectFrom('items').selectAll().where('list', '=', 'a').orderBy('id', 'desc').limit(10).compile().sql;
    const first = db.selectFrom('items').select('id').where('list', '=', 'a').limit(1).compile().sql;
    return { page, first };
  }

  /**
   * Runs `sql` with each of `limits` on one prepared statement and answers how often SQLite compiled
   * it again while running (its authorizer is called on every compilation, and only then), with the
   * number of rows each run returned.
   */
  function recompilations(sql: string, limits: number[]): { recompiled: number; rows: number[] } {
    const database = new DatabaseSync(':memory:');
    try {
      database.exec('create table items (id text primary key, list text not null); create index items_list on items (list, id)');
      const insert = database.prepare('insert into items (id, list) values (?, ?)');
      for (let index = 0; index < 30; index++) insert.run(`item_${String(index).padStart(2, '0')}`, 'a');
      let compilations = 0;
      database.setAuthorizer(() => {
        compilations++;
        return constants.SQLITE_OK;
      });
      const statement = database.prepare(sql);
      const prepared = compilations;
      const rows = limits.map((limit) => statement.all('a', limit).length);
      return { recompiled: compilations - prepared, rows };
    } finally {
      database.close();
    }
  }

  it('writes a limit that SQLite reads when the statement runs, so a new limit does not compile it again', () => {
    const adapter = new NodeSqliteDatabase(':memory:');
    try {
      const ours = compiledSql(new NodeSqliteDialect({ database: adapter }));
      const kyselys = compiledSql(new SqliteDialect({ database: adapter }));
      // What the dialect exists for: Kysely's own `limit ?` is compiled again on every run.
      assert.ok(recompilations(kyselys.page, [10, 25, 10]).recompiled >= 3, 'SQLite no longer compiles a bare `limit ?` again on every run; the cast can go');
      for (const sql of [ours.page, ours.first]) {
        const { recompiled, rows } = recompilations(sql, [10, 25, 1, 10, 0]);
        assert.equal(recompiled, 0, sql);
        // The same limit: the rows each run returns.
        assert.deepEqual(rows, [10, 25, 1, 10, 0], sql);
      }
    } finally {
      adapter.close();
    }
  });

  it('reports a statement that SQLite compiles again while it runs, and only such a statement', () => {
    const recompiled: string[] = [];
    const db = new NodeSqliteDatabase(':memory:', { onRecompile: (sql) => recompiled.push(sql) });
    try {
      db.prepare('create table items (id text primary key, list text not null)').run([]);
      const insert = db.prepare('insert into items (id, list) values (?, ?)');
      for (let index = 0; index < 5; index++) insert.run([`item_${index}`, 'a']);
      const bare = 'select id from items where list = ? order by id limit ?';
      const cast = 'select id from items where list = ? order by id limit cast(? as integer)';
      for (const limit of [1, 2, 3]) {
        assert.equal(db.prepare(bare).all(['a', limit]).length, limit);
        assert.equal(db.prepare(cast).all(['a', limit]).length, limit);
      }
      assert.deepEqual(recompiled, [bare, bare, bare]);

      // A schema change: each statement is compiled again once, on its next run.
      recompiled.length = 0;
      db.prepare('create index items_list on items (list, id)').run([]);
      for (const limit of [1, 2]) db.prepare(cast).all(['a', limit]);
      assert.equal([...db.prepare(cast).iterate(['a', 3])].length, 3);
      assert.deepEqual(recompiled, [cast]);
    } finally {
      db.close();
    }
  });
});
