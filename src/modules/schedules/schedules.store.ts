import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { scopeParams, visibleThroughConnection, type ConnectionScope } from '../../db/connection-scope.ts';
import { compiledPaging, type PageRequest } from '../../db/pagination.ts';
import type { ScheduleOccurrencesTable, SchedulesTable } from '../../db/schema.ts';

export type ScheduleChanges = Partial<Omit<SchedulesTable, 'id' | 'organization_id' | 'created_at'>>;

/** The schedules the scope may see, deleted ones never: every read of the API starts here. */
const visible = (db: Db, scope: ConnectionScope) =>
  visibleThroughConnection(db.selectFrom('schedules').selectAll('schedules'), 'schedules', scope).where('schedules.deleted_at', 'is', null);

// Compiled once (db/compiled-query.ts): every fire job reads and writes its schedule and occurrence.
const findVisible = compileOnce((db, p: { scope: ConnectionScope; id: string }) => visible(db, p.scope).where('schedules.id', '=', p.id));
/*
 * The locking reads hold the schedule's row until the transaction ends (`dialect.lockRows`: `for no
 * key update` on PostgreSQL; SQLite's writing transactions hold the write lock from `begin
 * immediate`), so that an edit and a fire job never act on one schedule at once: whichever comes
 * second sees what the first did (the revision it bumped, the next slot it queued).
 */
const lockVisible = compileOnce((db, p: { scope: ConnectionScope; id: string }, dialect) =>
  dialect.lockRows(visible(db, p.scope).where('schedules.id', '=', p.id)),
);
const lockById = compileOnce((db, p: { id: string }, dialect) =>
  dialect.lockRows(db.selectFrom('schedules').selectAll().where('id', '=', p.id).where('deleted_at', 'is', null)),
);
const insertRow = compileOnce((db, row: SchedulesTable) => db.insertInto('schedules').values(row));
const updateRow = compileOnce((db, p: { id: string; changes: ScheduleChanges }) => db.updateTable('schedules').set(p.changes).where('id', '=', p.id));
const listPage = compiledPaging(
  (db, p: { scope: ConnectionScope; status: string | undefined }) => {
    const query = visible(db, p.scope);
    return p.status === undefined ? query : query.where('schedules.status', '=', p.status);
  },
  { id: 'schedules.id', createdAt: 'schedules.created_at' },
);

const insertOccurrence = compileOnce((db, row: ScheduleOccurrencesTable) =>
  db
    .insertInto('schedule_occurrences')
    .values(row)
    .onConflict((conflict) => conflict.columns(['schedule_id', 'scheduled_for']).doNothing()),
);
const findOccurrence = compileOnce((db, p: { scheduleId: string; scheduledFor: string }) =>
  db.selectFrom('schedule_occurrences').selectAll().where('schedule_id', '=', p.scheduleId).where('scheduled_for', '=', p.scheduledFor),
);
const occurrencePage = compiledPaging(
  (db, p: { scheduleId: string }) => db.selectFrom('schedule_occurrences').selectAll().where('schedule_id', '=', p.scheduleId),
  {
    id: 'id',
    createdAt: 'created_at',
  },
);

export function createSchedulesStore() {
  return {
    find(db: Db, scope: ConnectionScope, id: string): Promise<SchedulesTable | undefined> {
      return findVisible.first(db, { scope: scopeParams(scope), id });
    },
    /** Reads a schedule the scope may see and holds its row until the transaction ends (see `lockVisible`). */
    lock(db: Db, scope: ConnectionScope, id: string): Promise<SchedulesTable | undefined> {
      return lockVisible.first(db, { scope: scopeParams(scope), id });
    },
    /** As `lock`, for the fire job, which has no caller to scope by. */
    lockById(db: Db, id: string): Promise<SchedulesTable | undefined> {
      return lockById.first(db, { id });
    },
    async insert(db: Db, row: SchedulesTable): Promise<void> {
      await insertRow.run(db, row);
    },
    async update(db: Db, id: string, changes: ScheduleChanges): Promise<void> {
      await updateRow.run(db, { id, changes });
    },
    list(db: Db, scope: ConnectionScope, filters: { status?: string | undefined }, page: PageRequest) {
      return listPage(db, { scope: scopeParams(scope), status: filters.status }, page);
    },
    /** The organization's active schedules (the limit counts these), whatever connection they send from. */
    async countActive(db: Db, organizationId: string): Promise<number> {
      const row = await db
        .selectFrom('schedules')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('organization_id', '=', organizationId)
        .where('status', '=', 'active')
        .where('deleted_at', 'is', null)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },

    /** Inserts unless the schedule has an occurrence for this slot; answers whether this call inserted it. */
    async insertOccurrence(db: Db, row: ScheduleOccurrencesTable): Promise<boolean> {
      return (await insertOccurrence.run(db, row)) > 0;
    },
    findOccurrence(db: Db, scheduleId: string, scheduledFor: string): Promise<ScheduleOccurrencesTable | undefined> {
      return findOccurrence.first(db, { scheduleId, scheduledFor });
    },
    listOccurrences(db: Db, scheduleId: string, page: PageRequest) {
      return occurrencePage(db, { scheduleId }, page);
    },
  };
}

export type SchedulesStore = ReturnType<typeof createSchedulesStore>;
