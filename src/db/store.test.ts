import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { before, describe, it, type TestContext } from 'node:test';
import { sql } from 'kysely';
import { compileOnce } from './compiled-query.ts';
import { isStoreReady, migrateToLatest, openStore } from './connect.ts';
import { createTestStore, suiteScope, usingPostgres, type TestStore } from '../../test/harness.ts';
import { rejectionOf } from '../../test/rejection.ts';
import { waitFor } from '../../test/wait.ts';

describe(`the store (${usingPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  let testStore: TestStore;
  const suite = suiteScope();
  before(async () => {
    testStore = await createTestStore(suite);
  });

  it('is ready once migrated', async () => {
    assert.equal(await isStoreReady(testStore.store), true);
  });

  it('round-trips 0/1 flags, unicode text and nulls the same on both backends', async () => {
    const { db } = testStore.store;
    const now = new Date().toISOString();
    await db
      .insertInto('organizations')
      .values({ id: 'org_1', name: 'Ünïcode ✓', metadata: '{}', require_approval_for_risky_actions: 0, created_at: now, updated_at: now })
      .execute();
    await db
      .insertInto('connections')
      .values({
        id: 'conn_1',
        organization_id: 'org_1',
        name: null,
        status: 'connected',
        test: 1,
        coexistence: 0,
        phone_number_id: null,
        waba_id: null,
        display_phone_number: null,
        metadata: '{}',
        created_at: now,
        updated_at: now,
      })
      .execute();
    const row = await db.selectFrom('connections').selectAll().where('id', '=', 'conn_1').executeTakeFirstOrThrow();
    assert.equal(row.test, 1);
    assert.equal(row.name, null);
    const org = await db.selectFrom('organizations').select('name').where('id', '=', 'org_1').executeTakeFirstOrThrow();
    assert.equal(org.name, 'Ünïcode ✓');
  });

  it('returns counts as numbers, not strings', async () => {
    const { count } = await testStore.store.db
      .selectFrom('organizations')
      .select(sql<number>`count(*)`.as('count'))
      .executeTakeFirstOrThrow();
    assert.equal(typeof count, 'number');
  });

  it('recognises a unique violation on both backends', async () => {
    const now = new Date().toISOString();
    const insert = () =>
      testStore.store.db
        .insertInto('users')
        .values({ id: `usr_${Math.random()}`, email: 'same@example.com', name: null, password_hash: 'x', created_at: now, updated_at: now })
        .execute();
    await insert();
    await assert.rejects(insert(), (error) => testStore.store.dialect.isUniqueViolation(error));
  });

  it('rolls a failed transaction back entirely', async () => {
    const { db } = testStore.store;
    const now = new Date().toISOString();
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await trx
          .insertInto('organizations')
          .values({ id: 'org_rollback', name: 'x', metadata: '{}', require_approval_for_risky_actions: 0, created_at: now, updated_at: now })
          .execute();
        throw new Error('abort');
      }),
    );
    assert.equal(await db.selectFrom('organizations').select('id').where('id', '=', 'org_rollback').executeTakeFirst(), undefined);
  });

  it('holds a row read with lockRows until the transaction ends: a second reader sees the first one’s change', async () => {
    const { db } = testStore.store;
    const now = new Date().toISOString();
    await db
      .insertInto('organizations')
      .values({ id: 'org_locked', name: 'x', metadata: '{}', require_approval_for_risky_actions: 0, created_at: now, updated_at: now })
      .execute();
    const lockOrganization = compileOnce((db, p: { id: string }, dialect) =>
      dialect.lockRows(db.selectFrom('organizations').selectAll().where('id', '=', p.id)),
    );
    // Each appends its letter to what it read: without the lock, the second would read 'x' and its
    // write would drop the first one's.
    const append = (letter: string, before?: () => Promise<void>) =>
      db.transaction().execute(async (trx) => {
        const row = (await lockOrganization.first(trx, { id: 'org_locked' }))!;
        if (before) await before();
        await trx
          .updateTable('organizations')
          .set({ name: row.name + letter })
          .where('id', '=', 'org_locked')
          .execute();
      });
    let second: Promise<void> | undefined;
    await append('A', async () => {
      second = append('B');
      // On PostgreSQL the second transaction is now waiting for the row; on SQLite it waits for the
      // one connection, which this transaction holds.
      if (usingPostgres) {
        await waitFor(
          async () => {
            const { rows } = await sql<{
              waiting: number;
            }>`select count(*) as waiting from pg_stat_activity where wait_event_type = 'Lock' and query like '%for no key update%'`.execute(db);
            return rows[0]!.waiting > 0;
          },
          { message: 'the second transaction to wait for the row lock' },
        );
      }
    });
    await second;
    const row = await db.selectFrom('organizations').select('name').where('id', '=', 'org_locked').executeTakeFirstOrThrow();
    assert.equal(row.name, 'xAB');
  });

  it(
    'a connection the database ends under an open transaction fails that transaction as unavailable, and the store carries on',
    { skip: !usingPostgres && 'needs TEST_DATABASE_URL' },
    async () => {
      const { db, dialect } = testStore.store;
      const failure = await rejectionOf(
        db.transaction().execute(async (trx) => {
          const { pid } = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!;
          await sql`select pg_terminate_backend(${pid})`.execute(db);
          // Ended between two statements, as a request's transaction is while its handler works.
          await waitFor(async () => (await sql`select 1 from pg_stat_activity where pid = ${pid}`.execute(db)).rows.length === 0, {
            message: 'the backend to end',
          });
          await sql`select 1`.execute(trx);
        }),
      );
      assert.ok(dialect.isUnavailable(failure), `not recognised as unavailable: ${String(failure)}`);
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db);
      assert.equal(rows[0]!.one, 1);
    },
  );
});

describe('a migration on PostgreSQL whose catalog scan meets another schema being dropped', () => {
  const skip = !usingPostgres && 'needs TEST_DATABASE_URL';

  /**
   * A schema of its own in a test store's database, migrated from nothing by `migrateToLatest`, where
   * the first catalog scan of Kysely's migrator fails with `code` (thrown once it ran, as PostgreSQL
   * answers when a schema it was reading is dropped under it). Each test's own database holds no
   * other schema being dropped, so the failure is made here rather than waited for.
   */
  async function migrateFailingFirstScan(t: TestContext, code: string): Promise<{ migrated: Promise<void>; scans: () => number }> {
    const host = await createTestStore(t);
    const schema = `${host.schema!}_again`;
    let scans = 0;
    const store = openStore({
      databaseUrl: host.databaseUrl,
      dataDir: host.dataDir,
      schema,
      poolSize: 1,
      onQuery: (text) => {
        if (!text.includes('"pg_catalog"."pg_attribute"')) return;
        if (++scans === 1) throw Object.assign(new Error(`a catalog scan failed with ${code}`), { code });
      },
    });
    t.after(() => store.close());
    return { migrated: migrateToLatest(store, schema).then(async () => assert.equal(await isStoreReady(store), true)), scans: () => scans };
  }

  it('tries again: nothing was applied when the scan failed', { skip }, async (t) => {
    const { migrated, scans } = await migrateFailingFirstScan(t, '3F000');
    await migrated;
    assert.ok(scans() > 1, `the catalog was scanned ${scans()} time(s)`);
  });

  it('any other failure is not tried again', { skip }, async (t) => {
    const { migrated, scans } = await migrateFailingFirstScan(t, '42501');
    const failure = await rejectionOf(migrated);
    assert.match(String(failure), /catalog scan failed with 42501/);
    assert.equal(scans(), 1);
  });
});

describe('a PostgreSQL store whose database does not answer', () => {
  it('fails a query as unavailable once the connect timeout has passed, rather than waiting for ever', { timeout: 10_000 }, async (t) => {
    // A partition: connections are accepted and never answered.
    const held = new Set<Socket>();
    const blackHole = createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    t.after(async () => {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => blackHole.close(resolve));
    });
    const address = blackHole.address();
    if (!address || typeof address === 'string') throw new Error('no port');
    const store = openStore({ databaseUrl: `postgres://postgres@127.0.0.1:${address.port}/test`, connectTimeoutMs: 200 });
    t.after(() => store.close());
    const failure = await rejectionOf(sql`select 1`.execute(store.db));
    assert.ok(store.dialect.isUnavailable(failure), `not recognised as unavailable: ${String(failure)}`);
  });
});
