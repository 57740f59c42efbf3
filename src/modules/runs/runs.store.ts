import { sql } from 'kysely';
import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { ConnectionScope } from '../../db/connection-scope.ts';
import { compiledPaging, type PageRequest } from '../../db/pagination.ts';
import type { RunEventsTable, RunsTable } from '../../db/schema.ts';
import { ACTIVE_RUN_STATUSES } from './runs.schemas.ts';

export type RunChanges = Partial<Omit<RunsTable, 'id' | 'organization_id' | 'automation_id' | 'created_at'>>;

export interface RunFilters {
  automationId?: string | undefined;
  status?: string | undefined;
  conversationId?: string | undefined;
  version?: number | undefined;
}

/**
 * A run is visible as its automation is: to its organization, narrowed to one connection for a
 * connection key and to test runs for a test key (a run's mode is its automation's).
 */
const visible = (db: Db, scope: ConnectionScope) => {
  let query = db.selectFrom('runs').selectAll().where('organization_id', '=', scope.organizationId);
  if (scope.connectionId) query = query.where('connection_id', '=', scope.connectionId);
  if (scope.test !== undefined) query = query.where('mode', '=', scope.test ? 'test' : 'live');
  return query;
};

// Every step job reads, locks and writes its run: compiled once (db/compiled-query.ts).
const findVisible = compileOnce((db, p: { scope: ConnectionScope; id: string }) => visible(db, p.scope).where('id', '=', p.id));
const findById = compileOnce((db, p: { id: string }) => db.selectFrom('runs').selectAll().where('id', '=', p.id));
/*
 * The run's row is held until the transaction ends (`for no key update` on PostgreSQL; SQLite's
 * writing transaction holds the write lock): a step, a reply, a timer and a cancel that race for one
 * run are serialized, and each re-checks `status` and `seq` once it holds the row.
 */
const lockById = compileOnce((db, p: { id: string }, dialect) => dialect.lockRows(db.selectFrom('runs').selectAll().where('id', '=', p.id)));
/**
 * Read on every inbound message, so it must use the partial index `runs_active_conversation`: its
 * predicate is written out literally, as the index states it. Bound as parameters, SQLite could not
 * prove the index covers the query and would scan the table.
 */
const ACTIVE_LIVE_RUN = sql<boolean>`status in ('queued', 'running', 'waiting', 'paused') and dry_run = 0 and conversation_id is not null`;
const lockActiveInConversation = compileOnce((db, p: { conversationId: string }, dialect) =>
  dialect.lockRows(db.selectFrom('runs').selectAll().where('conversation_id', '=', p.conversationId).where(ACTIVE_LIVE_RUN)),
);
const lockActiveOfAutomation = compileOnce((db, p: { automationId: string }, dialect) =>
  dialect.lockRows(db.selectFrom('runs').selectAll().where('automation_id', '=', p.automationId).where('status', 'in', ACTIVE_RUN_STATUSES).orderBy('id')),
);
const insertRow = compileOnce((db, row: RunsTable) =>
  db
    .insertInto('runs')
    .values(row)
    .onConflict((conflict) => conflict.doNothing()),
);
const updateRow = compileOnce((db, p: { id: string; changes: RunChanges }) => db.updateTable('runs').set(p.changes).where('id', '=', p.id));
const insertEvent = compileOnce((db, row: RunEventsTable) => db.insertInto('run_events').values(row));
const countSends = compileOnce((db, p: { contactId: string; since: string }) =>
  db
    .selectFrom('run_events')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('contact_id', '=', p.contactId)
    .where('at', '>', p.since),
);

const listPage = compiledPaging(
  (db, p: { scope: ConnectionScope; filters: RunFilters }) => {
    let query = visible(db, p.scope);
    if (p.filters.automationId !== undefined) query = query.where('automation_id', '=', p.filters.automationId);
    if (p.filters.status !== undefined) query = query.where('status', '=', p.filters.status);
    if (p.filters.conversationId !== undefined) query = query.where('conversation_id', '=', p.filters.conversationId);
    if (p.filters.version !== undefined) query = query.where('version', '=', p.filters.version);
    return query;
  },
  { id: 'id', createdAt: 'created_at' },
);

export function createRunsStore() {
  return {
    find(db: Db, scope: ConnectionScope, id: string): Promise<RunsTable | undefined> {
      return findVisible.first(db, { scope, id });
    },
    findById(db: Db, id: string): Promise<RunsTable | undefined> {
      return findById.first(db, { id });
    },
    lockById(db: Db, id: string): Promise<RunsTable | undefined> {
      return lockById.first(db, { id });
    },
    /** The conversation's active live run, held (at most one: the `runs_active_conversation` index). */
    lockActiveInConversation(db: Db, conversationId: string): Promise<RunsTable | undefined> {
      return lockActiveInConversation.first(db, { conversationId });
    },
    /** Inserts unless a run holds the conversation or the trigger already started one (the unique indexes); answers whether it did. */
    async insert(db: Db, row: RunsTable): Promise<boolean> {
      return (await insertRow.run(db, row)) > 0;
    },
    async update(db: Db, id: string, changes: RunChanges): Promise<void> {
      await updateRow.run(db, { id, changes });
    },
    async insertEvent(db: Db, row: RunEventsTable): Promise<void> {
      await insertEvent.run(db, row);
    },
    async insertEvents(db: Db, rows: readonly RunEventsTable[]): Promise<void> {
      // SQLite binds at most 32,766 values: 500 entries of 8 columns stay well below.
      for (let start = 0; start < rows.length; start += 500)
        await db
          .insertInto('run_events')
          .values(rows.slice(start, start + 500))
          .execute();
    },
    listEvents(db: Db, runId: string, afterSeq: number, limit: number): Promise<RunEventsTable[]> {
      return db.selectFrom('run_events').selectAll().where('run_id', '=', runId).where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
    },
    list(db: Db, scope: ConnectionScope, filters: RunFilters, page: PageRequest) {
      return listPage(db, { scope, filters }, page);
    },
    /** Automated messages queued to a contact since `since`, by every run (the runtime guard against automations answering automations). */
    async countAutomatedSends(db: Db, contactId: string, since: string): Promise<number> {
      return Number((await countSends.first(db, { contactId, since }))?.count ?? 0);
    },
    /** The automation's active runs, held, oldest first: what a deploy, a disable or a delete settles. */
    lockActiveOfAutomation(db: Db, automationId: string): Promise<RunsTable[]> {
      return lockActiveOfAutomation.all(db, { automationId });
    },
    async countActiveOfAutomation(db: Db, organizationId: string, automationId: string): Promise<number> {
      const row = await db
        .selectFrom('runs')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('organization_id', '=', organizationId)
        .where('automation_id', '=', automationId)
        .where('status', 'in', ACTIVE_RUN_STATUSES)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },
    /** Deletes at most `limit` event-log entries older than `before`, of any run; answers how many went. */
    async deleteEventsBefore(db: Db, before: string, limit: number): Promise<number> {
      const result = await db
        .deleteFrom('run_events')
        .where((eb) =>
          eb(
            eb.refTuple('run_id', 'seq'),
            'in',
            eb.selectFrom('run_events').select(['run_id', 'seq']).where('at', '<', before).limit(limit).$asTuple('run_id', 'seq'),
          ),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
    /** A merge folded one conversation into another: its runs, ended ones included, belong to the survivor. */
    async moveConversation(db: Db, from: string, to: string): Promise<void> {
      await db.updateTable('runs').set({ conversation_id: to }).where('conversation_id', '=', from).execute();
    },
    async versionsInUse(db: Db, automationId: string): Promise<Set<number>> {
      const rows = await db.selectFrom('runs').select('version').distinct().where('automation_id', '=', automationId).execute();
      return new Set(rows.map((row) => row.version));
    },
  };
}

export type RunsStore = ReturnType<typeof createRunsStore>;
