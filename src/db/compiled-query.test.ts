import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { compileOnce } from './compiled-query.ts';
import { compiledPaging, paginate } from './pagination.ts';
import type { AuditEventsTable, OrganizationsTable } from './schema.ts';
import { createTestStore, suiteScope, usingPostgres, type TestStore } from '../../test/harness.ts';
import { rejectionOf } from '../../test/rejection.ts';

const AT = '2026-06-01T12:00:00.000Z';

function organization(id: string, name: string): OrganizationsTable {
  return { id, name, metadata: '{}', require_approval_for_risky_actions: 0, created_at: AT, updated_at: AT };
}

function auditEvent(id: string, organizationId: string, action: string, targetId: string): AuditEventsTable {
  return {
    id,
    organization_id: organizationId,
    action,
    actor_type: 'system',
    actor_id: null,
    credential_type: null,
    credential_id: null,
    target_type: 'thing',
    target_id: targetId,
    request_id: null,
    data: '{}',
    created_at: `2026-06-01T12:00:${id.slice(-2)}.000Z`,
    oauth_client_id: null,
    oauth_client_name: null,
  };
}

// Values a careless cache might take for SQL or for one of its own placeholders.
const TRICKY = ['?', '$1', '$2', "x' or '1'='1", "'); drop table organizations; --", '?$1 :name @p', '[object Object]', 'undefined', 'null'];

const insertOrganization = compileOnce((db, row: OrganizationsTable) => db.insertInto('organizations').values(row));
const findOrganization = compileOnce((db, p: { id: string }) => db.selectFrom('organizations').selectAll().where('id', '=', p.id));
const findOrganizations = compileOnce((db, p: { ids: string[] }) => db.selectFrom('organizations').selectAll().where('id', 'in', p.ids).orderBy('id'));
const renameOrganization = compileOnce((db, p: { id: string; changes: Partial<Pick<OrganizationsTable, 'name' | 'metadata'>> }) =>
  db.updateTable('organizations').set(p.changes).where('id', '=', p.id),
);
const insertAuditEvent = compileOnce((db, row: AuditEventsTable) => db.insertInto('audit_events').values(row));
interface AuditFilters {
  organizationId: string;
  action: string | undefined;
  targetId: string | undefined;
}
const auditList = (db: TestStore['store']['db'], p: AuditFilters) => {
  let query = db.selectFrom('audit_events').selectAll().where('organization_id', '=', p.organizationId);
  if (p.action !== undefined) query = query.where('action', '=', p.action);
  if (p.targetId !== undefined) query = query.where('target_id', '=', p.targetId);
  return query;
};
const listAuditEvents = compileOnce((db, p: AuditFilters) => auditList(db, p).orderBy('id'));
const pageAuditEvents = compiledPaging((db, p: AuditFilters) => auditList(db, p), { id: 'id', createdAt: 'created_at' });

describe(`compiled queries (${usingPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  let testStore: TestStore;
  const suite = suiteScope();
  before(async () => {
    testStore = await createTestStore(suite);
    const { db } = testStore.store;
    for (let index = 0; index < 20; index++) await insertOrganization.run(db, organization(`org_${String(index).padStart(2, '0')}`, `Org ${index}`));
    for (const [index, name] of TRICKY.entries()) await insertOrganization.run(db, organization(`org_tricky_${index}`, name));
    for (let index = 10; index < 40; index++) {
      await insertAuditEvent.run(db, auditEvent(`aud_${index}`, index % 2 ? 'org_00' : 'org_01', index % 3 ? 'key.created' : 'key.revoked', `t_${index % 5}`));
    }
  });

  describe('happy path', () => {
    it('answers each call with its own parameters, one after another', async () => {
      const { db } = testStore.store;
      for (let index = 0; index < 20; index++) {
        const id = `org_${String(index).padStart(2, '0')}`;
        assert.equal((await findOrganization.first(db, { id }))?.name, `Org ${index}`);
      }
    });

    it('answers each call with its own parameters when calls overlap', async () => {
      const { db } = testStore.store;
      const ids = Array.from({ length: 60 }, (_, index) => `org_${String(index % 20).padStart(2, '0')}`);
      const names = await Promise.all(ids.map(async (id) => (await findOrganization.first(db, { id }))?.name));
      assert.deepEqual(
        names,
        ids.map((id) => `Org ${Number(id.slice(4))}`),
      );
    });

    it('runs inside a transaction on the transaction', async () => {
      const { db } = testStore.store;
      await db
        .transaction()
        .execute(async (trx) => {
          await renameOrganization.run(trx, { id: 'org_19', changes: { name: 'Renamed in a transaction' } });
          assert.equal((await findOrganization.first(trx, { id: 'org_19' }))?.name, 'Renamed in a transaction');
          throw new Error('roll back');
        })
        .catch((error: unknown) => assert.equal((error as Error).message, 'roll back'));
      assert.equal((await findOrganization.first(db, { id: 'org_19' }))?.name, 'Org 19');
    });

    it('gives an `in` list of each length its own shape', async () => {
      const { db } = testStore.store;
      for (const count of [1, 3, 2, 5, 1, 3]) {
        const ids = Array.from({ length: count }, (_, index) => `org_${String(index * 3).padStart(2, '0')}`);
        assert.deepEqual(
          (await findOrganizations.all(db, { ids })).map((row) => row.id),
          ids,
        );
      }
    });

    it('gives each combination of optional filters its own shape, with the rows plain Kysely finds', async () => {
      const { db } = testStore.store;
      const combinations: AuditFilters[] = [];
      for (const organizationId of ['org_00', 'org_01']) {
        for (const action of [undefined, 'key.created', 'key.revoked']) {
          for (const targetId of [undefined, 't_1', 't_4']) combinations.push({ organizationId, action, targetId });
        }
      }
      // Twice, in opposite orders: every shape is met once cold and once cached, with other values.
      for (const filters of [...combinations, ...combinations.reverse()]) {
        const expected = await auditList(db, filters).orderBy('id').execute();
        assert.deepEqual(await listAuditEvents.all(db, filters), expected, JSON.stringify(filters));
      }
    });

    it('updates only the columns given, each set of columns a shape of its own', async () => {
      const { db } = testStore.store;
      assert.equal(await renameOrganization.run(db, { id: 'org_18', changes: { name: 'Only the name' } }), 1);
      assert.equal(await renameOrganization.run(db, { id: 'org_18', changes: { metadata: '{"a":1}' } }), 1);
      assert.equal(await renameOrganization.run(db, { id: 'org_18', changes: { metadata: '{"b":2}', name: 'Both' } }), 1);
      assert.equal(await renameOrganization.run(db, { id: 'org_nope', changes: { name: 'Nobody' } }), 0);
      const row = await findOrganization.first(db, { id: 'org_18' });
      assert.equal(row?.name, 'Both');
      assert.equal(row?.metadata, '{"b":2}');
    });

    it('tells apart the same columns given in another order, each value landing in its own column', async () => {
      const { db } = testStore.store;
      // The two orders are two shapes whose SQL lists the columns differently: a call matched to the
      // other order's shape would put the name in `metadata` and the metadata in `name`.
      for (const round of [1, 2, 3]) {
        await renameOrganization.run(db, { id: 'org_17', changes: { name: `Name ${round}`, metadata: `{"round":${round}}` } });
        assert.deepEqual(await findOrganization.first(db, { id: 'org_17' }).then((row) => [row?.name, row?.metadata]), [`Name ${round}`, `{"round":${round}}`]);
        await renameOrganization.run(db, { id: 'org_17', changes: { metadata: `{"again":${round}}`, name: `Again ${round}` } });
        assert.deepEqual(await findOrganization.first(db, { id: 'org_17' }).then((row) => [row?.name, row?.metadata]), [
          `Again ${round}`,
          `{"again":${round}}`,
        ]);
      }
    });

    it('answers right across many shapes of one site, each met again after the others', async () => {
      const { db } = testStore.store;
      const counts = Array.from({ length: 20 }, (_, index) => index + 1);
      for (const count of [...counts, ...[...counts].reverse(), ...counts.filter((count) => count % 3 === 0)]) {
        const ids = Array.from({ length: count }, (_, index) => `org_${String(19 - index).padStart(2, '0')}`).reverse();
        assert.deepEqual(
          (await findOrganizations.all(db, { ids })).map((row) => row.id),
          ids,
          `${count} ids`,
        );
      }
    });

    it('pages like paginate, in both directions and with a cursor', async () => {
      const { db } = testStore.store;
      const filters: AuditFilters = { organizationId: 'org_00', action: 'key.created', targetId: undefined };
      for (const page of [
        { limit: 3, order: 'asc' as const },
        { limit: 3, order: 'desc' as const },
        { limit: 4, order: 'asc' as const, after: 'aud_13' },
        { limit: 4, order: 'desc' as const, after: 'aud_31' },
        { limit: 2, order: 'asc' as const, before: 'aud_31' },
        { limit: 2, order: 'asc' as const, createdAfter: '2026-06-01T12:00:20.000Z', createdBefore: '2026-06-01T12:00:30.000Z' },
        { limit: 100, order: 'desc' as const },
      ]) {
        assert.deepEqual(
          await pageAuditEvents(db, filters, page),
          await paginate(auditList(db, filters), { id: 'id', createdAt: 'created_at' }, page),
          JSON.stringify(page),
        );
      }
    });
  });

  describe('errors', () => {
    it('refuses a cursor the list cannot see, as paginate does', async () => {
      const { db } = testStore.store;
      // aud_12 belongs to org_01.
      const error = await rejectionOf(
        pageAuditEvents(db, { organizationId: 'org_00', action: undefined, targetId: undefined }, { limit: 5, order: 'asc', after: 'aud_12' }),
      );
      assert.equal((error as { code?: string }).code, 'validation_failed');
    });

    it('refuses a build that branches on a value instead of passing it to the query', async () => {
      const { db } = testStore.store;
      const branching = compileOnce((db, p: { order: 'asc' | 'desc' }) =>
        db
          .selectFrom('organizations')
          .select('id')
          .orderBy('id', p.order === 'asc' ? 'asc' : 'desc'),
      );
      const error = await rejectionOf(branching.all(db, { order: 'asc' }));
      assert.match((error as Error).message, /does not reach the query's parameters/);
    });

    it('refuses a build that computes from a value', async () => {
      const { db } = testStore.store;
      const computing = compileOnce((db, p: { limit: number }) =>
        db
          .selectFrom('organizations')
          .select('id')
          .limit(p.limit + 1),
      );
      const error = await rejectionOf(computing.all(db, { limit: 5 }));
      assert.match((error as Error).message, /does not reach the query's parameters/);
    });

    it('keeps the parameters typed', () => {
      const { db } = testStore.store;
      // @ts-expect-error an id is a string
      void findOrganization.first(db, { id: 1 }).catch(() => undefined);
      // @ts-expect-error the row has no such column
      void findOrganization.first(db, { id: 'org_00' }).then((row) => row?.nope);
    });
  });

  describe('security', () => {
    it('stores and finds values that look like placeholders or SQL as plain values', async () => {
      const { db } = testStore.store;
      for (const [index, name] of TRICKY.entries()) {
        const row = await findOrganization.first(db, { id: `org_tricky_${index}` });
        assert.equal(row?.name, name);
        // As the key of a lookup, each matches only itself.
        const byName = await db.selectFrom('organizations').select('id').where('name', '=', name).execute();
        assert.deepEqual(
          byName.map((each) => each.id),
          [`org_tricky_${index}`],
        );
        assert.equal(await findOrganization.first(db, { id: name }), undefined);
      }
    });

    it('never lets one call see another tenant through a cached shape', async () => {
      const { db } = testStore.store;
      const [a, b] = await Promise.all([
        listAuditEvents.all(db, { organizationId: 'org_00', action: undefined, targetId: undefined }),
        listAuditEvents.all(db, { organizationId: 'org_01', action: undefined, targetId: undefined }),
      ]);
      assert.ok(a.length > 0 && b.length > 0);
      assert.ok(a.every((row) => row.organization_id === 'org_00'));
      assert.ok(b.every((row) => row.organization_id === 'org_01'));
    });

    it('treats an empty string as a value of its own shape, not as an absent filter', async () => {
      const { db } = testStore.store;
      assert.deepEqual(await listAuditEvents.all(db, { organizationId: 'org_00', action: '', targetId: undefined }), []);
      assert.ok((await listAuditEvents.all(db, { organizationId: 'org_00', action: undefined, targetId: undefined })).length > 0);
    });
  });
});
