import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Delivery attempts are purged by age (`webhook_delivery.purge`): each batch reads the oldest through this. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.createIndex('webhook_deliveries_created').on('webhook_deliveries').column('created_at').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_created').execute();
}
