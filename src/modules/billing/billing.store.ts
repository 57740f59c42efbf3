import { sql } from 'kysely';
import type { Db } from '../../db/connect.ts';
import { compileOnce } from '../../db/compiled-query.ts';
import type { BillingMeterReportsTable, BillingStripeEventsTable, BillingSubscriptionsTable } from '../../db/schema.ts';

type SubscriptionChanges = Partial<Omit<BillingSubscriptionsTable, 'organization_id' | 'created_at'>> & { updated_at: string };

// The one hot query: the plan behind every counted fact (remembered a second by the service).
const findSubscriptionRow = compileOnce((db, p: { organizationId: string }) =>
  db.selectFrom('billing_subscriptions').selectAll().where('organization_id', '=', p.organizationId),
);

export function createBillingStore() {
  return {
    findSubscription(db: Db, organizationId: string): Promise<BillingSubscriptionsTable | undefined> {
      return findSubscriptionRow.first(db, { organizationId });
    },

    findSubscriptionByCustomer(db: Db, customerId: string): Promise<BillingSubscriptionsTable | undefined> {
      return db.selectFrom('billing_subscriptions').selectAll().where('stripe_customer_id', '=', customerId).executeTakeFirst();
    },

    /** Writes the organization's row: `row` when it has none, else `changes` over the one it has. */
    async upsertSubscription(db: Db, row: BillingSubscriptionsTable, changes: SubscriptionChanges): Promise<void> {
      await db
        .insertInto('billing_subscriptions')
        .values(row)
        .onConflict((conflict) => conflict.column('organization_id').doUpdateSet(changes))
        .execute();
    },

    /** Sets the customer unless the organization already has one; answers the one it has now. */
    async claimCustomer(db: Db, row: BillingSubscriptionsTable): Promise<string | null> {
      await db
        .insertInto('billing_subscriptions')
        .values(row)
        .onConflict((conflict) =>
          conflict
            .column('organization_id')
            .doUpdateSet({ stripe_customer_id: row.stripe_customer_id, updated_at: row.updated_at })
            .where('billing_subscriptions.stripe_customer_id', 'is', null),
        )
        .execute();
      const found = await db
        .selectFrom('billing_subscriptions')
        .select('stripe_customer_id')
        .where('organization_id', '=', row.organization_id)
        .executeTakeFirst();
      return found?.stripe_customer_id ?? null;
    },

    /** Organizations whose Stripe subscription is billed now: their usage goes to Stripe every hour. */
    listStripeBilled(db: Db, liveStatuses: readonly string[]): Promise<Pick<BillingSubscriptionsTable, 'organization_id' | 'stripe_customer_id'>[]> {
      return db
        .selectFrom('billing_subscriptions')
        .select(['organization_id', 'stripe_customer_id'])
        .where('provider', '=', 'stripe')
        .where('stripe_subscription_id', 'is not', null)
        .where('stripe_customer_id', 'is not', null)
        .where('status', 'in', liveStatuses)
        .orderBy('organization_id')
        .execute();
    },

    /** Inserts the event unless its id was received before; answers whether this call inserted it. */
    async insertEventIfAbsent(db: Db, row: BillingStripeEventsTable): Promise<boolean> {
      const result = await db
        .insertInto('billing_stripe_events')
        .values(row)
        .onConflict((conflict) => conflict.column('id').doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },

    findEvent(db: Db, id: string): Promise<BillingStripeEventsTable | undefined> {
      return db.selectFrom('billing_stripe_events').selectAll().where('id', '=', id).executeTakeFirst();
    },

    async markEventProcessed(db: Db, id: string, processedAt: string): Promise<void> {
      await db.updateTable('billing_stripe_events').set({ processed_at: processedAt }).where('id', '=', id).execute();
    },

    /** Reports frozen but not yet accepted by Stripe, oldest first: each is sent again as it was. */
    listPendingReports(db: Db, organizationId: string): Promise<BillingMeterReportsTable[]> {
      return db
        .selectFrom('billing_meter_reports')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .where('status', '=', 'pending')
        .orderBy('hour')
        .execute();
    },

    findReport(db: Db, organizationId: string, hour: string): Promise<BillingMeterReportsTable | undefined> {
      return db.selectFrom('billing_meter_reports').selectAll().where('organization_id', '=', organizationId).where('hour', '=', hour).executeTakeFirst();
    },

    /** What the organization's reports of `period` froze so far, sent or not. */
    async frozenQuantity(db: Db, organizationId: string, period: string): Promise<number> {
      const row = await db
        .selectFrom('billing_meter_reports')
        .select(sql<number | string | null>`sum(quantity)`.as('total'))
        .where('organization_id', '=', organizationId)
        .where('period', '=', period)
        .executeTakeFirst();
      return Number(row?.total ?? 0);
    },

    async insertReport(db: Db, row: BillingMeterReportsTable): Promise<void> {
      await db.insertInto('billing_meter_reports').values(row).execute();
    },

    async markReported(db: Db, organizationId: string, hour: string, reportedAt: string): Promise<void> {
      await db
        .updateTable('billing_meter_reports')
        .set({ status: 'reported', reported_at: reportedAt })
        .where('organization_id', '=', organizationId)
        .where('hour', '=', hour)
        .execute();
    },
  };
}

export type BillingStore = ReturnType<typeof createBillingStore>;
