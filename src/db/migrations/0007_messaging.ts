import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Contacts, conversations and messages: what inbound webhooks store, and what sending builds on. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('contacts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('phone_number', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('profile_name', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('last_inbound_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('contacts_phone_number').on('contacts').columns(['organization_id', 'phone_number']).unique().execute();
  await db.schema.createIndex('contacts_organization').on('contacts').columns(['organization_id', 'id']).execute();

  await db.schema
    .createTable('conversations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('connection_id', 'text', (c) => c.notNull().references('connections.id'))
    .addColumn('contact_id', 'text', (c) => c.notNull().references('contacts.id'))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('last_message_at', 'text')
    .addColumn('last_inbound_at', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // One thread per number and customer: every message between them belongs to it.
  await db.schema.createIndex('conversations_thread').on('conversations').columns(['connection_id', 'contact_id']).unique().execute();
  await db.schema.createIndex('conversations_organization').on('conversations').columns(['organization_id', 'id']).execute();

  await db.schema
    .createTable('messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('connection_id', 'text', (c) => c.notNull().references('connections.id'))
    .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id'))
    .addColumn('contact_id', 'text', (c) => c.notNull().references('contacts.id'))
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('context', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('provider_message_id', 'text')
    .addColumn('imported', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('sent_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // The provider's id names a message once per number: retried or re-batched webhooks store nothing twice.
  await db.schema.createIndex('messages_provider_id').on('messages').columns(['connection_id', 'provider_message_id']).unique().execute();
  await db.schema.createIndex('messages_conversation').on('messages').columns(['conversation_id', 'id']).execute();
  await db.schema.createIndex('messages_organization').on('messages').columns(['organization_id', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('messages').execute();
  await db.schema.dropTable('conversations').execute();
  await db.schema.dropTable('contacts').execute();
}
