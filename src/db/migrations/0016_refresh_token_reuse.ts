import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * The refresh token a session's last rotation replaced, and when: presented again after a short
 * grace, it means two parties hold the session's tokens, and the session is ended (reuse detection).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('dashboard_sessions').addColumn('previous_refresh_token_hash', 'text').execute();
  await db.schema.alterTable('dashboard_sessions').addColumn('rotated_at', 'text').execute();
  await db.schema.createIndex('dashboard_sessions_previous_refresh').on('dashboard_sessions').column('previous_refresh_token_hash').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('dashboard_sessions_previous_refresh').execute();
  await db.schema.alterTable('dashboard_sessions').dropColumn('rotated_at').execute();
  await db.schema.alterTable('dashboard_sessions').dropColumn('previous_refresh_token_hash').execute();
}
