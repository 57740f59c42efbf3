import { sql } from 'kysely';
import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.ts';

// Compiled once per number of rows (db/compiled-query.ts): a worker's settle transaction writes the
// attempts of its whole batch in one insert.
const insertDeliveries = compileOnce((db, p: { rows: readonly WebhookDeliveriesTable[] }) => db.insertInto('webhook_deliveries').values(p.rows));

export interface EndpointScope {
  organizationId: string;
  /** A connection key sees only the endpoints of its connection. */
  connectionId?: string | null | undefined;
}

// Read for every event any module emits (who should get it): built and compiled once.
const enabledOf = compileOnce((db, p: { organizationId: string }) =>
  db.selectFrom('webhook_endpoints').select(['id', 'events', 'connection_id']).where('organization_id', '=', p.organizationId).where('status', '=', 'enabled'),
);

export function createWebhookEndpointsStore() {
  const scoped = (db: Db, scope: EndpointScope) => {
    let query = db.selectFrom('webhook_endpoints').selectAll().where('organization_id', '=', scope.organizationId);
    if (scope.connectionId) query = query.where('connection_id', '=', scope.connectionId);
    return query;
  };
  return {
    async insert(db: Db, row: WebhookEndpointsTable): Promise<void> {
      await db.insertInto('webhook_endpoints').values(row).execute();
    },
    find(db: Db, scope: EndpointScope, id: string): Promise<WebhookEndpointsTable | undefined> {
      return scoped(db, scope).where('id', '=', id).executeTakeFirst();
    },
    /** For the delivery job, which starts from ids alone. */
    findById(db: Db, id: string): Promise<WebhookEndpointsTable | undefined> {
      return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
    },
    list(db: Db, scope: EndpointScope, page: PageRequest) {
      return paginate(scoped(db, scope), { id: 'id', createdAt: 'created_at' }, page);
    },
    listEnabled(db: Db, organizationId: string): Promise<Pick<WebhookEndpointsTable, 'id' | 'events' | 'connection_id'>[]> {
      return enabledOf.all(db, { organizationId });
    },
    async update(db: Db, id: string, changes: Partial<WebhookEndpointsTable>): Promise<void> {
      await db.updateTable('webhook_endpoints').set(changes).where('id', '=', id).execute();
    },
    async delete(db: Db, id: string): Promise<void> {
      await db.deleteFrom('webhook_endpoints').where('id', '=', id).execute();
    },
    /** Counts one more failure in a row; returns the endpoint's counters after the change. */
    async recordFailure(
      db: Db,
      id: string,
      at: string,
    ): Promise<Pick<WebhookEndpointsTable, 'consecutive_failures' | 'first_failure_at' | 'status'> | undefined> {
      return db
        .updateTable('webhook_endpoints')
        .set({ consecutive_failures: sql<number>`consecutive_failures + 1`, first_failure_at: sql<string>`coalesce(first_failure_at, ${at})` })
        .where('id', '=', id)
        .returning(['consecutive_failures', 'first_failure_at', 'status'])
        .executeTakeFirst();
    },
    async recordSuccess(db: Db, id: string): Promise<void> {
      await db
        .updateTable('webhook_endpoints')
        .set({ consecutive_failures: 0, first_failure_at: null })
        .where('id', '=', id)
        .where('consecutive_failures', '>', 0)
        .execute();
    },
    /** Disables only an endpoint that is still enabled, so one disabling is announced once. */
    async disable(db: Db, id: string, reason: string, at: string): Promise<boolean> {
      const result = await db
        .updateTable('webhook_endpoints')
        .set({ status: 'disabled', disabled_reason: reason, updated_at: at })
        .where('id', '=', id)
        .where('status', '=', 'enabled')
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    async insertDelivery(db: Db, row: WebhookDeliveriesTable): Promise<void> {
      await db.insertInto('webhook_deliveries').values(row).execute();
    },
    async insertDeliveries(db: Db, rows: readonly WebhookDeliveriesTable[]): Promise<void> {
      if (rows.length > 0) await insertDeliveries.run(db, { rows });
    },
    async updateDelivery(db: Db, id: string, changes: Partial<WebhookDeliveriesTable>): Promise<void> {
      await db.updateTable('webhook_deliveries').set(changes).where('id', '=', id).execute();
    },
    findDelivery(db: Db, organizationId: string, id: string): Promise<WebhookDeliveriesTable | undefined> {
      return db.selectFrom('webhook_deliveries').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    },
    listDeliveries(db: Db, endpointId: string, filters: { status?: string | undefined }, page: PageRequest) {
      let query = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
      if (filters.status !== undefined) query = query.where('status', '=', filters.status);
      return paginate(query, { id: 'id', createdAt: 'created_at' }, page);
    },
    /**
     * Deletes at most `limit` attempts made before `createdBefore`, except those whose retry is still
     * after `now`; returns how many went.
     */
    async deleteDeliveriesBefore(db: Db, createdBefore: string, now: string, limit: number): Promise<number> {
      const old = db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('created_at', '<', createdBefore)
        .where((eb) => eb.or([eb('next_retry_at', 'is', null), eb('next_retry_at', '<=', now)]))
        .limit(limit);
      const result = await db.deleteFrom('webhook_deliveries').where('id', 'in', old).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type WebhookEndpointsStore = ReturnType<typeof createWebhookEndpointsStore>;
