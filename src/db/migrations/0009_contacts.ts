import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Contacts as an API resource: email, the marketing consent summary, soft deletion, and the consent
 * history. A deleted contact keeps its row (messages and conversations point at it), so the number's
 * uniqueness now holds among live contacts only: a partial index, which SQLite and PostgreSQL share.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('contacts').addColumn('email', 'text').execute();
  await db.schema
    .alterTable('contacts')
    .addColumn('marketing_consent', 'text', (c) => c.notNull().defaultTo('unknown'))
    .execute();
  await db.schema.alterTable('contacts').addColumn('marketing_consent_since', 'text').execute();
  await db.schema.alterTable('contacts').addColumn('marketing_consent_source', 'text').execute();
  await db.schema.alterTable('contacts').addColumn('deleted_at', 'text').execute();

  await db.schema.dropIndex('contacts_phone_number').execute();
  await db.schema
    .createIndex('contacts_phone_number')
    .on('contacts')
    .columns(['organization_id', 'phone_number'])
    .unique()
    .where(sql<boolean>`deleted_at is null`)
    .execute();
  // A new contact for a number looks up the number's last deleted contact (its opt-out carries over).
  await db.schema
    .createIndex('contacts_deleted_phone_number')
    .on('contacts')
    .columns(['organization_id', 'phone_number', 'deleted_at'])
    .where(sql<boolean>`deleted_at is not null`)
    .execute();

  await db.schema
    .createTable('contact_consents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('contact_id', 'text', (c) => c.notNull().references('contacts.id'))
    .addColumn('topic', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('recorded_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('contact_consents_contact').on('contact_consents').columns(['contact_id', 'id']).execute();
  // The effective status of a topic is its latest record by recorded_at: one index seek.
  await db.schema.createIndex('contact_consents_latest').on('contact_consents').columns(['contact_id', 'topic', 'recorded_at', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('contact_consents').execute();
  await db.schema.dropIndex('contacts_deleted_phone_number').execute();
  await db.schema.dropIndex('contacts_phone_number').execute();
  // Fails while a deleted contact and a live one share a number: going back would merge them, which no migration should guess.
  await db.schema.createIndex('contacts_phone_number').on('contacts').columns(['organization_id', 'phone_number']).unique().execute();
  for (const column of ['deleted_at', 'marketing_consent_source', 'marketing_consent_since', 'marketing_consent', 'email']) {
    await db.schema.alterTable('contacts').dropColumn(column).execute();
  }
}
