import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, it, type TestContext } from 'node:test';
import { sql } from 'kysely';
import { openStore, type Store } from './connect.ts';
import type { RequestTransaction } from './request-transaction.ts';

// Group commit is SQLite's (one writer); on PostgreSQL each request transaction commits on its own
// connection, which the idempotency and store suites cover on both backends.

interface Opened {
  store: Store;
  /** A second connection to the same file: it sees only what has been committed. */
  outside: DatabaseSync;
}

async function opened(t: TestContext): Promise<Opened> {
  const dir = mkdtempSync(path.join(tmpdir(), 'group-commit-'));
  const file = path.join(dir, 'test.sqlite');
  const store = openStore({ sqliteFile: file });
  // A deferred foreign key is checked at COMMIT: the one way to make a commit fail on demand.
  await sql`create table notes (id integer primary key, body text not null, parent integer references notes (id) deferrable initially deferred)`.execute(
    store.db,
  );
  const outside = new DatabaseSync(file);
  t.after(async () => {
    outside.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, outside };
}

async function insert(store: Store, body: string, parent: number | null = null): Promise<void> {
  await sql`insert into notes (body, parent) values (${body}, ${parent})`.execute(store.db);
}

function committedBodies(outside: DatabaseSync): string[] {
  return (outside.prepare('select body from notes order by id').all() as { body: string }[]).map((row) => row.body);
}

/** A promise's state without waiting for it: whether it has settled by the time the event loop's pending work ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

/** A request transaction that has written `body`. */
async function writer(store: Store, body: string, parent: number | null = null): Promise<RequestTransaction> {
  const transaction = await store.openRequestTransaction();
  await transaction.run(() => insert(store, body, parent));
  return transaction;
}

/**
 * Ends a member (`end`: its commit or rollback) while the next request transaction asks to open, so
 * that the end hands the next the turn and the group stays open; the next then writes `body`.
 */
async function handOver<T>(store: Store, end: () => Promise<T>, body: string, parent: number | null = null) {
  const opening = store.openRequestTransaction();
  const ended = end();
  const next = await opening;
  await next.run(() => insert(store, body, parent));
  return { next, ended };
}

describe('request transactions on SQLite: group commit', () => {
  it('a transaction that arrives while another commits joins its group: neither is committed, nor answered, before the group is', async (t) => {
    const { store, outside } = await opened(t);
    const first = await writer(store, 'first');
    const { next: second, ended: firstCommitted } = await handOver(store, () => first.commit(), 'second');

    assert.equal(await settled(firstCommitted), false, 'the first answers only once its group has committed');
    assert.deepEqual(committedBodies(outside), [], 'nothing of the group is visible to another connection before its commit');
    await second.commit();
    await firstCommitted;
    assert.deepEqual(committedBodies(outside), ['first', 'second']);
  });

  it('a member that rolls back undoes only its own work; the group keeps the rest', async (t) => {
    const { store, outside } = await opened(t);
    const first = await writer(store, 'kept');
    const { next: second, ended: firstCommitted } = await handOver(store, () => first.commit(), 'undone');
    const { next: third, ended: secondRolledBack } = await handOver(store, () => second.rollback(), 'also kept');
    await third.commit();
    await firstCommitted;
    assert.equal(await secondRolledBack, true, 'what the rolled-back member read was committed');
    assert.deepEqual(committedBodies(outside), ['kept', 'also kept']);
  });

  it('the first member, which has no savepoint, rolls back alone too: the next starts the group afresh', async (t) => {
    const { store, outside } = await opened(t);
    const first = await writer(store, 'undone');
    const { next: second, ended: firstRolledBack } = await handOver(store, () => first.rollback(), 'kept');
    assert.equal(await firstRolledBack, true);
    await second.commit();
    assert.deepEqual(committedBodies(outside), ['kept']);
  });

  it('a group whose commit fails fails every member, and a member that rolled back learns its reads were not kept', async (t) => {
    const { store, outside } = await opened(t);
    const first = await writer(store, 'good');
    // Its parent does not exist: the deferred check fails the group's COMMIT, not this statement.
    const { next: second, ended: firstCommitted } = await handOver(store, () => first.commit(), 'orphan', 999);
    const { next: third, ended: secondCommitted } = await handOver(store, () => second.commit(), 'read only');
    const thirdRolledBack = third.rollback();

    await assert.rejects(firstCommitted, /FOREIGN KEY constraint failed/);
    await assert.rejects(secondCommitted, /FOREIGN KEY constraint failed/);
    assert.equal(await thirdRolledBack, false);
    assert.deepEqual(committedBodies(outside), [], 'nothing of a failed group is kept');

    // The connection is usable again, and the next group commits.
    await (await writer(store, 'after')).commit();
    assert.deepEqual(committedBodies(outside), ['after']);
  });

  it('a query outside any request transaction waits for the open group and sees it whole', async (t) => {
    const { store } = await opened(t);
    const first = await writer(store, 'one');
    const reading = sql<{ count: number }>`select count(*) as count from notes`.execute(store.db);
    const { next: second, ended: firstCommitted } = await handOver(store, () => first.commit(), 'two');
    await second.commit();
    await firstCommitted;
    // Asked for before the second joined, it still ran after the group: never between its members.
    assert.equal((await reading).rows[0]?.count, 2);
  });

  it('a group takes at most 16 members, so that a query waiting outside is not held back for ever', async (t) => {
    const { store } = await opened(t);
    const first = await store.openRequestTransaction();
    const reading = sql<{ count: number }>`select count(*) as count from notes`.execute(store.db);
    const openings = Array.from({ length: 20 }, () => store.openRequestTransaction());
    const commits = [
      first.run(() => insert(store, 'member 0')).then(() => first.commit()),
      ...openings.map(async (opening, index) => {
        const member = await opening;
        await member.run(() => insert(store, `member ${index + 1}`));
        await member.commit();
      }),
    ];
    await Promise.all(commits);
    // The first and the next 15 of those waiting: then the group commits, and the query waiting longest runs.
    assert.equal((await reading).rows[0]?.count, 16);
    assert.equal((await sql<{ count: number }>`select count(*) as count from notes`.execute(store.db)).rows[0]?.count, 21);
  });

  it('a write of its own (commitWithRequests) joins the group, and its body’s own transaction runs in it, all or nothing', async (t) => {
    const { store, outside } = await opened(t);
    const first = await writer(store, 'request');
    let committedMeanwhile: string[] | undefined;
    const own = store.commitWithRequests(() =>
      store.db.transaction().execute(async () => {
        committedMeanwhile = committedBodies(outside);
        await insert(store, 'worker');
      }),
    );
    const firstCommitted = first.commit();
    await Promise.all([own, firstCommitted]);
    assert.deepEqual(committedMeanwhile, [], 'it ran in the request’s group, before the group’s commit');
    assert.deepEqual(committedBodies(outside), ['request', 'worker']);

    // A body whose transaction fails and which carries on regardless keeps nothing.
    const failing = store.commitWithRequests(async () => {
      await store.db
        .transaction()
        .execute(async () => {
          await insert(store, 'undone');
          throw new Error('refused');
        })
        .catch(() => undefined);
      await insert(store, 'after the failure');
    });
    await assert.rejects(failing, /rolled back, so the whole must/);
    assert.deepEqual(committedBodies(outside), ['request', 'worker']);
  });

  it('closing the store commits a group still waiting for its commit', async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'group-commit-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'test.sqlite');
    const store = openStore({ sqliteFile: file });
    await sql`create table notes (id integer primary key, body text not null, parent integer)`.execute(store.db);
    const transaction = await store.openRequestTransaction();
    await transaction.run(() => insert(store, 'kept'));
    const committed = transaction.commit();
    await store.close();
    await committed;
    const reopened = new DatabaseSync(file);
    t.after(() => reopened.close());
    assert.deepEqual(committedBodies(reopened), ['kept']);
  });
});
