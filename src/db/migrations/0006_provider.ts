import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** The provider issue: connected numbers' credentials and state, and the provider's webhooks as received. */
export async function up(db: AnyDb): Promise<void> {
  // SQLite adds one column per statement.
  const columns: [string, 'text' | 'integer'][] = [
    ['access_token', 'text'],
    ['verified_name', 'text'],
    ['quality_rating', 'text'],
    ['messaging_limit_tier', 'text'],
    ['throughput_per_second', 'integer'],
    ['onboarding', 'text'],
    ['connected_at', 'text'],
    ['disconnected_at', 'text'],
  ];
  for (const [name, type] of columns) await db.schema.alterTable('connections').addColumn(name, type).execute();
  await db.schema.createIndex('connections_phone_number').on('connections').columns(['phone_number_id', 'status']).execute();
  await db.schema.createIndex('connections_waba').on('connections').columns(['waba_id', 'status']).execute();

  await db.schema
    .createTable('provider_webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    // The provider retries a webhook with the same bytes: the hash makes the retry a no-op.
    .addColumn('body_sha256', 'text', (c) => c.notNull().unique())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addColumn('processed_at', 'text')
    .addColumn('updates', 'integer')
    .addColumn('error', 'text')
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('provider_webhooks').execute();
  await db.schema.dropIndex('connections_waba').execute();
  await db.schema.dropIndex('connections_phone_number').execute();
  for (const name of [
    'disconnected_at',
    'connected_at',
    'onboarding',
    'throughput_per_second',
    'messaging_limit_tier',
    'quality_rating',
    'verified_name',
    'access_token',
  ]) {
    await db.schema.alterTable('connections').dropColumn(name).execute();
  }
}
