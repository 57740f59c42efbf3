import { sql } from 'kysely';
import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { compiledPaging, type PageRequest } from '../../db/pagination.ts';
import type { AutomationsTable, AutomationVersionsTable } from '../../db/schema.ts';

export type AutomationChanges = Partial<Omit<AutomationsTable, 'id' | 'organization_id' | 'mode' | 'created_at'>>;

/**
 * Who may see which automations: an organization's, narrowed to one connection's for a connection
 * key and to test ones for a test key. Undefined fields do not narrow (they are part of the
 * compiled query's shape, db/compiled-query.ts).
 */
export interface AutomationScope {
  organizationId: string;
  connectionId: string | undefined;
  mode: 'test' | undefined;
}

/** The automations the scope may see, deleted ones never: every read of the API starts here. */
function visible(db: Db, scope: AutomationScope) {
  let query = db.selectFrom('automations').selectAll().where('organization_id', '=', scope.organizationId).where('deleted_at', 'is', null);
  if (scope.connectionId !== undefined) query = query.where('connection_id', '=', scope.connectionId);
  if (scope.mode !== undefined) query = query.where('mode', '=', scope.mode);
  return query;
}

const scopeParams = (scope: AutomationScope): AutomationScope => ({ organizationId: scope.organizationId, connectionId: scope.connectionId, mode: scope.mode });

const findVisible = compileOnce((db, p: { scope: AutomationScope; id: string }) => visible(db, p.scope).where('id', '=', p.id));
/*
 * The locking reads hold the automation's row until the transaction ends (`for no key update` on
 * PostgreSQL; SQLite's writers already hold the one write lock), so that two versions written at once
 * cannot both be N+1, and a run ending never counts against an automation a deploy is resetting.
 */
const lockVisible = compileOnce((db, p: { scope: AutomationScope; id: string }, dialect) => dialect.lockRows(visible(db, p.scope).where('id', '=', p.id)));
const resetFailures = compileOnce((db, p: { organizationId: string; id: string; now: string }) =>
  db
    .updateTable('automations')
    .set({ consecutive_failures: 0, updated_at: p.now })
    .where('organization_id', '=', p.organizationId)
    .where('id', '=', p.id)
    .where('consecutive_failures', '<>', 0),
);
const lockOfOrganization = compileOnce((db, p: { organizationId: string; id: string }, dialect) =>
  dialect.lockRows(
    db.selectFrom('automations').selectAll().where('organization_id', '=', p.organizationId).where('id', '=', p.id).where('deleted_at', 'is', null),
  ),
);
const findOfOrganization = compileOnce((db, p: { organizationId: string; id: string }) =>
  db.selectFrom('automations').selectAll().where('organization_id', '=', p.organizationId).where('id', '=', p.id).where('deleted_at', 'is', null),
);
const insertRow = compileOnce((db, row: AutomationsTable) => db.insertInto('automations').values(row));
const updateRow = compileOnce((db, p: { id: string; changes: AutomationChanges }) => db.updateTable('automations').set(p.changes).where('id', '=', p.id));
const listPage = compiledPaging(
  (db, p: { scope: AutomationScope; status: string | undefined; connectionId: string | undefined }) => {
    let query = visible(db, p.scope);
    if (p.status !== undefined) query = query.where('status', '=', p.status);
    if (p.connectionId !== undefined) query = query.where('connection_id', '=', p.connectionId);
    return query;
  },
  { id: 'id', createdAt: 'created_at' },
);

// A literal, as the partial index `automations_trigger` writes it: compared with a parameter, SQLite
// reads the parameter's value to match the index and compiles the statement again on every run
// (docs/benchmarks.md, the tenth pass).
const ENABLED = sql.lit('enabled');

// Every trigger (an inbound message, an event) looks its automations up: one read on the partial
// index `automations_trigger`, the deployed version's id beside each (definitions are cached by it).
const deployedFor = compileOnce((db, p: { organizationId: string; triggerType: string; triggerEvent: string | null }) => {
  const query = db
    .selectFrom('automations')
    .innerJoin('automation_versions', (join) =>
      join.onRef('automation_versions.automation_id', '=', 'automations.id').onRef('automation_versions.number', '=', 'automations.deployed_version'),
    )
    .selectAll('automations')
    .select('automation_versions.id as version_id')
    .where('automations.organization_id', '=', p.organizationId)
    .where('automations.trigger_type', '=', p.triggerType)
    .where('automations.status', '=', ENABLED)
    .where('automations.deleted_at', 'is', null);
  return (
    p.triggerEvent === null ? query.where('automations.trigger_event', 'is', null) : query.where('automations.trigger_event', '=', p.triggerEvent)
  ).orderBy('automations.id');
});

const insertVersion = compileOnce((db, row: AutomationVersionsTable) => db.insertInto('automation_versions').values(row));
const findVersion = compileOnce((db, p: { automationId: string; number: number }) =>
  db.selectFrom('automation_versions').selectAll().where('automation_id', '=', p.automationId).where('number', '=', p.number),
);
const versionPage = compiledPaging(
  (db, p: { automationId: string }) => db.selectFrom('automation_versions').selectAll().where('automation_id', '=', p.automationId),
  {
    id: 'id',
    createdAt: 'created_at',
  },
);

export function createAutomationsStore() {
  return {
    find(db: Db, scope: AutomationScope, id: string): Promise<AutomationsTable | undefined> {
      return findVisible.first(db, { scope: scopeParams(scope), id });
    },
    /** Reads an automation the scope may see and holds its row until the transaction ends (see `lockVisible`). */
    lock(db: Db, scope: AutomationScope, id: string): Promise<AutomationsTable | undefined> {
      return lockVisible.first(db, { scope: scopeParams(scope), id });
    },
    /** As `lock`, for the runs module, which has no caller to scope by. */
    lockOfOrganization(db: Db, organizationId: string, id: string): Promise<AutomationsTable | undefined> {
      return lockOfOrganization.first(db, { organizationId, id });
    },
    findOfOrganization(db: Db, organizationId: string, id: string): Promise<AutomationsTable | undefined> {
      return findOfOrganization.first(db, { organizationId, id });
    },
    async insert(db: Db, row: AutomationsTable): Promise<void> {
      await insertRow.run(db, row);
    },
    async update(db: Db, id: string, changes: AutomationChanges): Promise<void> {
      await updateRow.run(db, { id, changes });
    },
    /** A successful run: the failure count back to 0, written (and its row locked) only when it is not 0 already. */
    async resetFailures(db: Db, organizationId: string, id: string, now: string): Promise<void> {
      await resetFailures.run(db, { organizationId, id, now });
    },
    list(db: Db, scope: AutomationScope, filters: { status?: string | undefined; connectionId?: string | undefined }, page: PageRequest) {
      return listPage(db, { scope: scopeParams(scope), status: filters.status, connectionId: filters.connectionId }, page);
    },
    /** The organization's enabled automations (the limit counts these), whatever their mode. */
    async countEnabled(db: Db, organizationId: string): Promise<number> {
      const row = await db
        .selectFrom('automations')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('organization_id', '=', organizationId)
        .where('status', '=', ENABLED)
        .where('deleted_at', 'is', null)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },
    /** Enabled automations whose deployed trigger is this one, oldest first, each with its deployed version's id. */
    deployedFor(db: Db, organizationId: string, trigger: { type: string; event: string | null }): Promise<(AutomationsTable & { version_id: string })[]> {
      return deployedFor.all(db, { organizationId, triggerType: trigger.type, triggerEvent: trigger.event });
    },

    async insertVersion(db: Db, row: AutomationVersionsTable): Promise<void> {
      await insertVersion.run(db, row);
    },
    findVersion(db: Db, automationId: string, number: number): Promise<AutomationVersionsTable | undefined> {
      return findVersion.first(db, { automationId, number });
    },
    /** The definitions of these versions, by id (the trigger look-up's cache misses). */
    async definitionsOf(db: Db, versionIds: readonly string[]): Promise<Map<string, string>> {
      if (versionIds.length === 0) return new Map();
      const rows = await db.selectFrom('automation_versions').select(['id', 'definition']).where('id', 'in', versionIds).execute();
      return new Map(rows.map((row) => [row.id, row.definition]));
    },
    listVersions(db: Db, automationId: string, page: PageRequest) {
      return versionPage(db, { automationId }, page);
    },
    /** Every version number the automation keeps, oldest first. */
    async versionNumbers(db: Db, automationId: string): Promise<number[]> {
      const rows = await db.selectFrom('automation_versions').select('number').where('automation_id', '=', automationId).orderBy('number').execute();
      return rows.map((row) => row.number);
    },
    async deleteVersions(db: Db, automationId: string, numbers: readonly number[]): Promise<void> {
      if (numbers.length === 0) return;
      await db.deleteFrom('automation_versions').where('automation_id', '=', automationId).where('number', 'in', numbers).execute();
    },
  };
}

export type AutomationsStore = ReturnType<typeof createAutomationsStore>;
