import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * The 24-hour window's warning, and contact merges. `window_warning_for` records which closing time
 * the last `conversation.window_expiring` announced, so the warning is sent once per closing time
 * even when its timer runs again or a merge hands a window to another conversation. Merging and the
 * window endpoint find a contact's conversations by contact, which no index served.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('conversations').addColumn('window_warning_for', 'text').execute();
  await db.schema.createIndex('conversations_contact').on('conversations').columns(['contact_id', 'last_inbound_at']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('conversations_contact').execute();
  await db.schema.alterTable('conversations').dropColumn('window_warning_for').execute();
}
