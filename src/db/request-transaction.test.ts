import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, it, type TestContext } from 'node:test';
import { sql } from 'kysely';
import { openStore, type Store } from './connect.ts';
import type { RequestTransaction } from './request-transaction.ts';

// Group commit is what a single-connection backend does (request-transaction.ts), so these run on an
// SQLite file of their own in both passes of the suite; a second connection to the file sees what
// has been committed, and only that.
async function sqliteStore(t: TestContext): Promise<{ store: Store; committed: () => string[] }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'group-commit-'));
  const file = path.join(dir, 'store.sqlite');
  const store = openStore({ sqliteFile: file });
  await sql`create table notes (id integer primary key, body text not null, parent integer references notes (id) deferrable initially deferred)`.execute(
    store.db,
  );
  const reader = new DatabaseSync(file);
  t.after(async () => {
    reader.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, committed: () => (reader.prepare('select body from notes order by id').all() as { body: string }[]).map((row) => row.body) };
}

const insert = (transaction: RequestTransaction, store: Store, body: string, parent: number | null = null) =>
  transaction.run(() => sql`insert into notes (body, parent) values (${body}, ${parent})`.execute(store.db));

/** Settles what is already queued (the hand-over of the connection is a few promise turns). */
const turns = () => new Promise((resolve) => setImmediate(resolve));

describe('group commit on a single-connection store', () => {
  it('a request that ends while the next one waits hands it the transaction, and both commit together', async (t) => {
    const { store, committed } = await sqliteStore(t);
    const first = await store.openRequestTransaction();
    const secondOpening = store.openRequestTransaction();
    await insert(first, store, 'first');
    const firstCommitted = first.commit();
    const second = await secondOpening;
    await insert(second, store, 'second');
    await turns();
    assert.deepEqual(committed(), [], 'the first request is not committed while the second runs in its transaction');
    let firstDone = false;
    void firstCommitted.then(() => (firstDone = true));
    await turns();
    assert.equal(firstDone, false, "the first request's commit waits for the group's");
    await second.commit();
    await firstCommitted;
    assert.deepEqual(committed(), ['first', 'second']);
  });

  it('a request with nobody waiting commits at once', async (t) => {
    const { store, committed } = await sqliteStore(t);
    const only = await store.openRequestTransaction();
    await insert(only, store, 'alone');
    await only.commit();
    assert.deepEqual(committed(), ['alone']);
  });

  it('a request that fails rolls back alone; the group commits the others', async (t) => {
    const { store, committed } = await sqliteStore(t);
    const first = await store.openRequestTransaction();
    const secondOpening = store.openRequestTransaction();
    const thirdOpening = store.openRequestTransaction();
    await insert(first, store, 'first');
    const firstCommitted = first.commit();
    const second = await secondOpening;
    await insert(second, store, 'second, rolled back');
    // It read what the first request wrote, so it waits for the group (see below) while the third runs.
    const secondRolledBack = second.rollback();
    const third = await thirdOpening;
    await insert(third, store, 'third');
    await third.commit();
    await firstCommitted;
    await secondRolledBack;
    assert.equal(second.groupFailure, undefined);
    assert.deepEqual(committed(), ['first', 'third']);
  });

  it('a group whose commit fails fails every request of it, and keeps nothing of any', async (t) => {
    const { store, committed } = await sqliteStore(t);
    const first = await store.openRequestTransaction();
    const secondOpening = store.openRequestTransaction();
    // A deferred foreign key is checked at the commit: it makes the group's commit fail.
    await insert(first, store, 'first, pointing nowhere', 999);
    const firstCommitted = first.commit();
    const second = await secondOpening;
    await insert(second, store, 'second');
    await assert.rejects(second.commit(), /FOREIGN KEY constraint failed/);
    await assert.rejects(firstCommitted, /FOREIGN KEY constraint failed/);
    assert.equal(first.isOpen, false);
    assert.equal(second.isOpen, false);
    assert.deepEqual(committed(), []);
    const after = await store.openRequestTransaction();
    await insert(after, store, 'after');
    await after.commit();
    assert.deepEqual(committed(), ['after'], 'the store carries on with a new group');
  });

  it('a request that rolled back after others of its group waits for the group, and learns when it failed', async (t) => {
    const { store, committed } = await sqliteStore(t);
    const first = await store.openRequestTransaction();
    const secondOpening = store.openRequestTransaction();
    const thirdOpening = store.openRequestTransaction();
    await insert(first, store, 'first, pointing nowhere', 999);
    const firstCommitted = first.commit();
    const second = await secondOpening;
    // It reads the first request's uncommitted row, as a replay or a conflict would, and rolls back.
    const seen = await second.run(() => sql<{ n: number }>`select count(*) as n from notes`.execute(store.db));
    assert.equal(seen.rows[0]!.n, 1);
    const secondRolledBack = second.rollback();
    const third = await thirdOpening;
    await insert(third, store, 'third');
    await assert.rejects(third.commit(), /FOREIGN KEY constraint failed/);
    await assert.rejects(firstCommitted);
    await secondRolledBack;
    assert.match(String(second.groupFailure), /FOREIGN KEY constraint failed/, 'what it answered from the first request is void');
    assert.deepEqual(committed(), []);
  });

  it('a request that rolled back first in its group depends on nobody, and does not wait', async (t) => {
    const { store } = await sqliteStore(t);
    const first = await store.openRequestTransaction();
    const secondOpening = store.openRequestTransaction();
    await insert(first, store, 'rolled back');
    await first.rollback();
    assert.equal(first.groupFailure, undefined);
    const second = await secondOpening;
    await insert(second, store, 'second, pointing nowhere', 999);
    await assert.rejects(second.commit());
    assert.equal(first.groupFailure, undefined, 'it read nothing of the failed group');
  });

  it('a reader outside any request waits for the group to commit, and is not made part of it', async (t) => {
    const { store, committed } = await sqliteStore(t);
    const first = await store.openRequestTransaction();
    const read = sql<{ n: number }>`select count(*) as n from notes`.execute(store.db);
    const secondOpening = store.openRequestTransaction();
    await insert(first, store, 'first');
    await first.commit();
    assert.deepEqual(committed(), ['first'], 'committed at once: the next in line is not a request');
    assert.equal((await read).rows[0]!.n, 1);
    const second = await secondOpening;
    await insert(second, store, 'second');
    await second.commit();
    assert.deepEqual(committed(), ['first', 'second']);
  });

  it('a group holds at most 16 requests: a longer line commits in several', async (t) => {
    const { store, committed } = await sqliteStore(t);
    const openings = Array.from({ length: 20 }, () => store.openRequestTransaction());
    const commits: Promise<void>[] = [];
    const seenBefore: number[] = [];
    for (const [index, opening] of openings.entries()) {
      const transaction = await opening;
      seenBefore.push(committed().length);
      await insert(transaction, store, `request ${index}`);
      commits.push(transaction.commit());
    }
    await Promise.all(commits);
    assert.equal(committed().length, 20);
    assert.deepEqual(seenBefore.slice(0, 16), Array<number>(16).fill(0), 'the first 16 share one commit');
    assert.equal(seenBefore[16], 16, 'the 17th begins a group of its own, after the first committed');
  });
});
