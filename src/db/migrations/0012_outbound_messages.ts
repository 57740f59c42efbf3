import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Outbound messages are stored before the provider is called: `send_request` keeps what is to be
 * sent (media still named by our own ids), so the queued send can be retried or resumed after a
 * crash without the original request.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('messages').addColumn('send_request', 'text').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('messages').dropColumn('send_request').execute();
}
