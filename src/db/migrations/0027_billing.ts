import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Billing (docs/billing.md).
 *
 * - `billing_subscriptions`: at most one row per organization; none means `free`, `active`, on the
 *   `local` provider. `stripe_customer_id` is the organization's Customer at Stripe (unique: a
 *   webhook finds its organization by it), `stripe_subscription_id` the subscription the row mirrors.
 *   `cancel_at_period_end` is 0/1.
 * - `billing_stripe_events`: each Stripe event id received, once; its processing job re-reads the
 *   object from Stripe and sets `processed_at`.
 * - `billing_meter_reports`: one row per (organization, hour) whose usage was reported as a Billing
 *   Meter event. The quantity is frozen here (`pending`) before Stripe is called, so that a retry
 *   sends the same identifier with the same value; `reported` once Stripe accepted it.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('billing_subscriptions')
    .addColumn('organization_id', 'text', (c) => c.primaryKey().references('organizations.id'))
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('stripe_customer_id', 'text')
    .addColumn('stripe_subscription_id', 'text')
    .addColumn('current_period_end', 'text')
    .addColumn('cancel_at_period_end', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('billing_subscriptions_customer').on('billing_subscriptions').column('stripe_customer_id').unique().execute();

  await db.schema
    .createTable('billing_stripe_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('object_id', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addColumn('processed_at', 'text')
    .execute();

  await db.schema
    .createTable('billing_meter_reports')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('hour', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('identifier', 'text', (c) => c.notNull())
    .addColumn('stripe_customer_id', 'text', (c) => c.notNull())
    .addColumn('quantity', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('reported_at', 'text')
    .addPrimaryKeyConstraint('billing_meter_reports_pk', ['organization_id', 'hour'])
    .execute();
  await db.schema.createIndex('billing_meter_reports_period').on('billing_meter_reports').columns(['organization_id', 'period']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of ['billing_meter_reports', 'billing_stripe_events', 'billing_subscriptions']) await db.schema.dropTable(table).execute();
}
