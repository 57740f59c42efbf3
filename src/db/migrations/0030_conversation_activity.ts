import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * `GET /v1/conversations?sort=recent` (the inbox's order) walks an organization's conversations by
 * latest activity: `coalesce(last_message_at, created_at)`, then id. An index on that expression
 * serves the order and the keyset cursor on both backends (SQLite indexes expressions too).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createIndex('conversations_activity')
    .on('conversations')
    .expression(sql`organization_id, coalesce(last_message_at, created_at), id`)
    .execute();
}
