import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * The notification rail: a row per notification (`ntf_`), and a row per batch (`ntb_`) that made
 * several at once.
 *
 * `dedupe_claim` holds the notification's `dedupe_key` for as long as the key is reserved (24 hours):
 * the partial unique index on it is what makes two requests with one key, arriving together, end
 * with one notification. A claim past its day is released (set null) by the next notification that
 * wants the key; `dedupe_key` itself stays as it was given.
 *
 * `due_at` is when its send job runs: `send_at`, moved along the number's lane so that a batch's sends
 * are spaced at the number's ceiling and two batches do not overlap (`notifications.service.ts`).
 *
 * `message_id` is indexed because every status of every outbound message looks for the notification
 * it belongs to (`notifications.service.ts`, the message subscriber).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('notification_batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('connection_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('atomicity', 'text', (c) => c.notNull())
    .addColumn('template', 'text', (c) => c.notNull())
    .addColumn('recipient_count', 'integer', (c) => c.notNull())
    .addColumn('errors', 'text', (c) => c.notNull())
    .addColumn('send_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('schedule_id', 'text')
    .addColumn('occurrence_id', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('notification_batches_list').on('notification_batches').columns(['organization_id', 'id']).execute();
  await db.schema.createIndex('notification_batches_occurrence').on('notification_batches').column('occurrence_id').unique().execute();

  await db.schema
    .createTable('notifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('connection_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('contact_id', 'text')
    .addColumn('to', 'text', (c) => c.notNull())
    .addColumn('template_id', 'text', (c) => c.notNull())
    .addColumn('template', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('send_at', 'text', (c) => c.notNull())
    .addColumn('due_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('batch_id', 'text')
    .addColumn('batch_index', 'integer')
    .addColumn('dedupe_key', 'text')
    .addColumn('dedupe_claim', 'text')
    .addColumn('schedule_id', 'text')
    .addColumn('occurrence_id', 'text')
    .addColumn('message_id', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('replay_of', 'text')
    .addColumn('replayed_by', 'text')
    .addColumn('sent_at', 'text')
    .addColumn('delivered_at', 'text')
    .addColumn('failed_at', 'text')
    .addColumn('expired_at', 'text')
    .addColumn('canceled_at', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('notifications_list').on('notifications').columns(['organization_id', 'id']).execute();
  await db.schema.createIndex('notifications_batch').on('notifications').columns(['batch_id', 'batch_index']).execute();
  await db.schema.createIndex('notifications_lane').on('notifications').columns(['connection_id', 'due_at']).execute();
  await db.schema.createIndex('notifications_message').on('notifications').column('message_id').execute();
  await db.schema.createIndex('notifications_occurrence').on('notifications').column('occurrence_id').execute();
  await db.schema
    .createIndex('notifications_dedupe')
    .on('notifications')
    .columns(['organization_id', 'mode', 'dedupe_claim'])
    .unique()
    .where(sql<boolean>`dedupe_claim is not null`)
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('notifications').execute();
  await db.schema.dropTable('notification_batches').execute();
}
