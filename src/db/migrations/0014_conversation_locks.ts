import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Conversation locks: a lease one member holds on a conversation, a row per lease. At most one lease
 * of a conversation is `held`: a partial unique index that SQLite and PostgreSQL share, which is what
 * makes two members acquiring at once end with exactly one holder.
 *
 * A contact merge deletes the conversation it folds away, so its locks go with it (`cascade`) rather
 * than block the merge. The holder has no key: a lock is history once it ends, and a member removed
 * while holding one must not take the row with them before it is announced as ended.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('conversation_locks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('connection_id', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('last_change', 'text', (c) => c.notNull())
    .addColumn('holder_member_id', 'text', (c) => c.notNull())
    .addColumn('previous_holder_member_id', 'text')
    .addColumn('ttl_seconds', 'integer', (c) => c.notNull())
    .addColumn('idle_seconds', 'integer', (c) => c.notNull())
    .addColumn('acquired_at', 'text', (c) => c.notNull())
    .addColumn('renewed_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('idle_expires_at', 'text', (c) => c.notNull())
    .addColumn('ended_at', 'text')
    .addColumn('request_member_id', 'text')
    .addColumn('request_message', 'text')
    .addColumn('requested_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('conversation_locks_held')
    .on('conversation_locks')
    .column('conversation_id')
    .unique()
    .where(sql<boolean>`status = 'held'`)
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('conversation_locks').execute();
}
