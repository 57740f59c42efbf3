import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { visibleThroughConnection, type ConnectionScope } from '../../db/connection-scope.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { NotificationBatchesTable, NotificationsTable } from '../../db/schema.ts';

export interface NotificationListFilters {
  status?: string | undefined;
  batchId?: string | undefined;
  scheduleId?: string | undefined;
  connectionId?: string | undefined;
  contactId?: string | undefined;
  templateId?: string | undefined;
}

export type NotificationChanges = Partial<Omit<NotificationsTable, 'id' | 'organization_id'>>;

// The send job and the message subscriber run these for every notification: built and compiled once.
const byId = compileOnce((db, p: { id: string }) => db.selectFrom('notifications').selectAll().where('id', '=', p.id));
const byMessage = compileOnce((db, p: { messageId: string }) => db.selectFrom('notifications').selectAll().where('message_id', '=', p.messageId));
const transitionRow = compileOnce((db, p: { id: string; from: readonly string[]; changes: NotificationChanges }) =>
  db.updateTable('notifications').set(p.changes).where('id', '=', p.id).where('status', 'in', p.from),
);
const updateRow = compileOnce((db, p: { id: string; changes: NotificationChanges }) => db.updateTable('notifications').set(p.changes).where('id', '=', p.id));

const visible = (db: Db, scope: ConnectionScope) => visibleThroughConnection(db.selectFrom('notifications').selectAll('notifications'), 'notifications', scope);

export function createNotificationsStore() {
  return {
    find(db: Db, scope: ConnectionScope, id: string): Promise<NotificationsTable | undefined> {
      return visible(db, scope).where('notifications.id', '=', id).executeTakeFirst();
    },

    /** For the rail's own jobs, which have no caller to scope by. */
    findById(db: Db, id: string): Promise<NotificationsTable | undefined> {
      return byId.first(db, { id });
    },

    findByMessage(db: Db, messageId: string): Promise<NotificationsTable | undefined> {
      return byMessage.first(db, { messageId });
    },

    list(db: Db, scope: ConnectionScope, filters: NotificationListFilters, page: PageRequest) {
      let query = visible(db, scope);
      if (filters.status !== undefined) query = query.where('notifications.status', '=', filters.status);
      if (filters.batchId !== undefined) query = query.where('notifications.batch_id', '=', filters.batchId);
      if (filters.scheduleId !== undefined) query = query.where('notifications.schedule_id', '=', filters.scheduleId);
      if (filters.connectionId !== undefined) query = query.where('notifications.connection_id', '=', filters.connectionId);
      if (filters.contactId !== undefined) query = query.where('notifications.contact_id', '=', filters.contactId);
      if (filters.templateId !== undefined) query = query.where('notifications.template_id', '=', filters.templateId);
      return paginate(query, { id: 'notifications.id', createdAt: 'notifications.created_at' }, page);
    },

    /** The notifications holding these dedupe keys now (claims of the last 24 hours). */
    findClaims(db: Db, organizationId: string, mode: string, keys: readonly string[]): Promise<NotificationsTable[]> {
      if (keys.length === 0) return Promise.resolve([]);
      return db
        .selectFrom('notifications')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .where('mode', '=', mode)
        .where('dedupe_claim', 'in', keys)
        .execute();
    },

    /** Gives up the claims on these keys made before `before`: their day is over. */
    async releaseClaims(db: Db, organizationId: string, mode: string, keys: readonly string[], before: string): Promise<void> {
      if (keys.length === 0) return;
      await db
        .updateTable('notifications')
        .set({ dedupe_claim: null })
        .where('organization_id', '=', organizationId)
        .where('mode', '=', mode)
        .where('dedupe_claim', 'in', keys)
        .where('created_at', '<', before)
        .execute();
    },

    async insertAll(db: Db, rows: readonly NotificationsTable[]): Promise<void> {
      // SQLite binds at most 32,766 values in one statement; a notification has 32 columns.
      for (let start = 0; start < rows.length; start += 500)
        await db
          .insertInto('notifications')
          .values(rows.slice(start, start + 500))
          .execute();
    },

    /** Moves a notification only from one of `from`: answers whether this call moved it. */
    async transition(db: Db, id: string, from: readonly string[], changes: NotificationChanges): Promise<boolean> {
      return (await transitionRow.run(db, { id, from, changes })) > 0;
    },

    async update(db: Db, id: string, changes: NotificationChanges): Promise<void> {
      await updateRow.run(db, { id, changes });
    },

    /**
     * How far the number's lane is taken: the latest `due_at` from `dueFrom` on, among the waiting
     * notifications meant to start by `sendBy` (a batch for tomorrow does not push today's back).
     */
    async laneEnd(db: Db, connectionId: string, dueFrom: string, sendBy: string, waiting: readonly string[]): Promise<string | undefined> {
      const row = await db
        .selectFrom('notifications')
        .select((eb) => eb.fn.max('due_at').as('last'))
        .where('connection_id', '=', connectionId)
        .where('due_at', '>=', dueFrom)
        .where('send_at', '<=', sendBy)
        .where('status', 'in', waiting)
        .executeTakeFirst();
      return row?.last ?? undefined;
    },

    /** Records the replay on the original, once: answers false when another replay got there first. */
    async markReplayed(db: Db, id: string, replayId: string): Promise<boolean> {
      const result = await db
        .updateTable('notifications')
        .set({ replayed_by: replayId })
        .where('id', '=', id)
        .where('replayed_by', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },

    /** The batch's notifications still `scheduled` become `queued` (their send_at has come). */
    async queueBatch(db: Db, batchId: string, at: string): Promise<void> {
      await db
        .updateTable('notifications')
        .set({ status: 'queued', updated_at: at })
        .where('batch_id', '=', batchId)
        .where('status', '=', 'scheduled')
        .where('send_at', '<=', at)
        .execute();
    },

    waitingOfBatch(db: Db, batchId: string, waiting: readonly string[]): Promise<NotificationsTable[]> {
      return db.selectFrom('notifications').selectAll().where('batch_id', '=', batchId).where('status', 'in', waiting).execute();
    },

    findBatch(db: Db, scope: ConnectionScope, id: string): Promise<NotificationBatchesTable | undefined> {
      return visibleThroughConnection(db.selectFrom('notification_batches').selectAll('notification_batches'), 'notification_batches', scope)
        .where('notification_batches.id', '=', id)
        .executeTakeFirst();
    },

    findBatchById(db: Db, id: string): Promise<NotificationBatchesTable | undefined> {
      return db.selectFrom('notification_batches').selectAll().where('id', '=', id).executeTakeFirst();
    },

    async insertBatch(db: Db, row: NotificationBatchesTable): Promise<void> {
      await db.insertInto('notification_batches').values(row).execute();
    },

    /** The batch's notification ids in recipient order, and its counts by status. */
    async batchContents(db: Db, batchId: string): Promise<{ ids: string[]; counts: Map<string, number> }> {
      const rows = await db.selectFrom('notifications').select(['id', 'status']).where('batch_id', '=', batchId).orderBy('batch_index').execute();
      const counts = new Map<string, number>();
      for (const row of rows) counts.set(row.status, (counts.get(row.status) ?? 0) + 1);
      return { ids: rows.map((row) => row.id), counts };
    },

    /** What an occurrence already created: one notification, or a batch. */
    async findOccurrenceResult(db: Db, occurrenceId: string): Promise<{ notificationId?: string; batchId?: string } | undefined> {
      const batch = await db.selectFrom('notification_batches').select('id').where('occurrence_id', '=', occurrenceId).executeTakeFirst();
      if (batch) return { batchId: batch.id };
      const single = await db.selectFrom('notifications').select('id').where('occurrence_id', '=', occurrenceId).executeTakeFirst();
      return single ? { notificationId: single.id } : undefined;
    },
  };
}

export type NotificationsStore = ReturnType<typeof createNotificationsStore>;
