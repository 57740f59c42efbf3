import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Conversations as a place where people work: who is assigned, who answers (`control`), tags, and
 * internal notes. Tags live twice on purpose: as a sorted JSON array on the conversation, so that
 * reading one (a page, an event) costs no extra query, and as rows of `conversation_tags`, so that
 * `?tag=` is an index search instead of a scan of every conversation's JSON.
 *
 * The assignee is current state, so a member who is removed leaves their conversations unassigned
 * (`on delete set null`); a note's author is history, so it keeps the member id with no key.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('conversations')
    .addColumn('assignee_id', 'text', (c) => c.references('members.id').onDelete('set null'))
    .execute();
  await db.schema
    .alterTable('conversations')
    .addColumn('control', 'text', (c) => c.notNull().defaultTo('api'))
    .execute();
  await db.schema
    .alterTable('conversations')
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  // The inbox's usual questions: "assigned to me", "open ones", each a page in id order.
  await db.schema.createIndex('conversations_assignee').on('conversations').columns(['organization_id', 'assignee_id', 'id']).execute();
  await db.schema.createIndex('conversations_state').on('conversations').columns(['organization_id', 'state', 'id']).execute();

  await db.schema
    .createTable('conversation_tags')
    .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id').onDelete('cascade'))
    .addColumn('tag', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addPrimaryKeyConstraint('conversation_tags_pkey', ['conversation_id', 'tag'])
    .execute();
  await db.schema.createIndex('conversation_tags_tag').on('conversation_tags').columns(['organization_id', 'tag', 'conversation_id']).execute();

  await db.schema
    .createTable('conversation_notes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('conversation_id', 'text', (c) => c.notNull().references('conversations.id'))
    .addColumn('author_member_id', 'text')
    .addColumn('author_credential_kind', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('conversation_notes_conversation').on('conversation_notes').columns(['conversation_id', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('conversation_notes').execute();
  await db.schema.dropTable('conversation_tags').execute();
  await db.schema.dropIndex('conversations_state').execute();
  await db.schema.dropIndex('conversations_assignee').execute();
  for (const column of ['tags', 'control', 'assignee_id']) await db.schema.alterTable('conversations').dropColumn(column).execute();
}
