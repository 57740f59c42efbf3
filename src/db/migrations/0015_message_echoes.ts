import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Coexistence: a message the owner sent from the business app reaches us as an echo. It is an
 * outbound message of the thread like any other, marked so that nobody mistakes it for one the API sent.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('messages')
    .addColumn('echo', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('messages').dropColumn('echo').execute();
}
