import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * The sandbox provider's tables (store/tables.ts). They sit beside the service's in its store and
 * are created with them, in cloud mode too, where they stay empty: a store is the same whatever
 * provider the processes using it are configured with.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('sandbox_wabas')
    .addColumn('waba_id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sandbox_subscriptions')
    .addColumn('waba_id', 'text', (c) => c.notNull())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('override_callback_uri', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('sandbox_subscriptions_pk', ['waba_id', 'app_id'])
    .execute();
  await db.schema
    .createTable('sandbox_numbers')
    .addColumn('phone_number_id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'text', (c) => c.notNull())
    .addColumn('waba_id', 'text', (c) => c.notNull())
    .addColumn('display_phone_number', 'text', (c) => c.notNull())
    .addColumn('verified_name', 'text', (c) => c.notNull())
    .addColumn('coexistence', 'integer', (c) => c.notNull())
    .addColumn('quality_rating', 'text', (c) => c.notNull())
    .addColumn('messaging_limit_tier', 'text', (c) => c.notNull())
    .addColumn('throughput_level', 'text', (c) => c.notNull())
    .addColumn('pin_enabled', 'integer', (c) => c.notNull())
    .addColumn('register_attempts', 'text', (c) => c.notNull())
    .addColumn('onboarded_at', 'text', (c) => c.notNull())
    .addColumn('sync_requested', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sandbox_numbers_waba').on('sandbox_numbers').column('waba_id').execute();
  await db.schema
    .createTable('sandbox_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('waba_id', 'text', (c) => c.notNull())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('revoked', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sandbox_tokens_waba').on('sandbox_tokens').column('waba_id').execute();
  await db.schema
    .createTable('sandbox_codes')
    .addColumn('code', 'text', (c) => c.primaryKey())
    .addColumn('phone_number_id', 'text', (c) => c.notNull())
    .addColumn('spent_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sandbox_node_ids')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .execute();
  await db.schema
    .createTable('sandbox_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'text', (c) => c.notNull())
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('phone_number_id', 'text', (c) => c.notNull())
    .addColumn('wa_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('in_window', 'integer', (c) => c.notNull())
    .addColumn('template_category', 'text')
    .addColumn('free_entry_point', 'integer', (c) => c.notNull())
    .addColumn('biz_opaque_callback_data', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sandbox_messages_seq').on('sandbox_messages').column('seq').execute();
  await db.schema.createIndex('sandbox_messages_recipient').on('sandbox_messages').columns(['wa_id', 'seq']).execute();
  await db.schema.createIndex('sandbox_messages_number').on('sandbox_messages').columns(['phone_number_id', 'seq']).execute();
  await db.schema
    .createTable('sandbox_conversations')
    .addColumn('phone_number_id', 'text', (c) => c.notNull())
    .addColumn('wa_id', 'text', (c) => c.notNull())
    .addColumn('last_inbound_at', 'text')
    .addColumn('last_referral_at', 'text')
    .addPrimaryKeyConstraint('sandbox_conversations_pk', ['phone_number_id', 'wa_id'])
    .execute();
  await db.schema
    .createTable('sandbox_behaviour')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('fail_next', 'text')
    .addColumn('fail_next_async', 'text')
    .addColumn('auto_status', 'integer', (c) => c.notNull())
    .addColumn('throttle', 'text')
    .addColumn('throughput_mps', 'integer')
    .addColumn('template_review', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sandbox_rate_windows')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('period', 'bigint', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('sandbox_media')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'text', (c) => c.notNull())
    .addColumn('waba_id', 'text', (c) => c.notNull())
    .addColumn('phone_number_id', 'text', (c) => c.notNull())
    .addColumn('mime_type', 'text', (c) => c.notNull())
    .addColumn('size', 'integer', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('filename', 'text')
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    // Last: SQLite reaches a column after a large value only by walking its overflow pages, so the
    // cap's scans of size, seq and expires_at would otherwise read every file.
    .addColumn('bytes', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sandbox_media_seq').on('sandbox_media').column('seq').execute();
  await db.schema.createIndex('sandbox_media_expiry').on('sandbox_media').column('expires_at').execute();
  await db.schema
    .createTable('sandbox_templates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'text', (c) => c.notNull())
    .addColumn('waba_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('language', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('parameter_format', 'text', (c) => c.notNull())
    .addColumn('components', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // A (name, language) pair exists once per account: the provider's 2388024 on a second create.
  await db.schema.createIndex('sandbox_templates_name').on('sandbox_templates').columns(['waba_id', 'name', 'language']).unique().execute();
  await db.schema
    .createTable('sandbox_webhooks')
    .addColumn('seq', 'text', (c) => c.primaryKey())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('url', 'text')
    .addColumn('status', 'integer')
    .addColumn('error', 'text')
    .addColumn('at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  for (const table of [
    'sandbox_webhooks',
    'sandbox_templates',
    'sandbox_media',
    'sandbox_rate_windows',
    'sandbox_behaviour',
    'sandbox_conversations',
    'sandbox_messages',
    'sandbox_node_ids',
    'sandbox_codes',
    'sandbox_tokens',
    'sandbox_numbers',
    'sandbox_subscriptions',
    'sandbox_wabas',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
