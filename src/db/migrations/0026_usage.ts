import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Usage (docs/usage.md). Every row counts live traffic only: a test connection's facts are never
 * written here.
 *
 * - `usage_counters`: one row per (organization, UTC day, meter, connection, automation), moved in
 *   the transaction of the fact. `connection_id` and `automation_id` are `''` when the fact has none
 *   (an API request, a delivery of an organization-wide event), so that they can be in the key.
 * - `usage_periods`: the same counts summed per calendar month, moved in the same transaction; the
 *   plan's limits, the thresholds and the hard limit on sends read one row instead of a month of them.
 * - `usage_thresholds`: each (meter, threshold, period) reached, once; its insert is what emits
 *   `usage.threshold_reached`. `connection_id` is the number's for the messaging tier, `''` otherwise.
 * - `usage_recipients`: the last time each contact was sent a message through each number, for the
 *   unique recipients of the last 24 hours against the number's messaging tier.
 * Quantities are `bigint`: media bytes pass 2^31 within a month.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('usage_counters')
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('meter', 'text', (c) => c.notNull())
    .addColumn('connection_id', 'text', (c) => c.notNull())
    .addColumn('automation_id', 'text', (c) => c.notNull())
    .addColumn('quantity', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_counters_pk', ['organization_id', 'day', 'meter', 'connection_id', 'automation_id'])
    .execute();
  await db.schema
    .createTable('usage_periods')
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('meter', 'text', (c) => c.notNull())
    .addColumn('quantity', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_periods_pk', ['organization_id', 'period', 'meter'])
    .execute();
  await db.schema
    .createTable('usage_thresholds')
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('meter', 'text', (c) => c.notNull())
    .addColumn('connection_id', 'text', (c) => c.notNull())
    .addColumn('threshold_percent', 'integer', (c) => c.notNull())
    .addColumn('quantity', 'bigint', (c) => c.notNull())
    .addColumn('limit', 'bigint', (c) => c.notNull())
    .addColumn('reached_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_thresholds_pk', ['organization_id', 'period', 'meter', 'connection_id', 'threshold_percent'])
    .execute();
  await db.schema
    .createTable('usage_recipients')
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('connection_id', 'text', (c) => c.notNull())
    .addColumn('contact_id', 'text', (c) => c.notNull())
    .addColumn('last_sent_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_recipients_pk', ['connection_id', 'contact_id'])
    .execute();
  await db.schema.createIndex('usage_recipients_recent').on('usage_recipients').columns(['connection_id', 'last_sent_at']).execute();
  await db.schema.createIndex('usage_recipients_organization').on('usage_recipients').columns(['organization_id', 'last_sent_at']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of ['usage_recipients', 'usage_thresholds', 'usage_periods', 'usage_counters']) await db.schema.dropTable(table).execute();
}
