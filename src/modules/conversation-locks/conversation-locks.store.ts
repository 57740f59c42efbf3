import { sql } from 'kysely';
import type { Db } from '../../db/connect.ts';
import type { ConversationLocksTable } from '../../db/schema.ts';

export type LockChanges = Partial<Omit<ConversationLocksTable, 'id' | 'organization_id' | 'connection_id' | 'conversation_id' | 'created_at'>>;

export function createConversationLocksStore() {
  /**
   * Holds rows until the transaction ends (a no-op update takes the row lock on PostgreSQL; SQLite's
   * writers are serialised anyway), so that a renewal, a release and a timer never act on one lease at once.
   */
  const lock = (db: Db) => db.updateTable('conversation_locks').set((eb) => ({ updated_at: eb.ref('updated_at') }));
  // A literal, not a parameter: only then can the planner see that the partial index on held leases
  // applies (every send asks), instead of scanning every lease the conversation ever had.
  const HELD = sql.lit('held');
  return {
    /** The conversation's `held` lease, whether or not its deadline has passed. */
    findHeld(db: Db, organizationId: string, conversationId: string): Promise<ConversationLocksTable | undefined> {
      return db
        .selectFrom('conversation_locks')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .where('conversation_id', '=', conversationId)
        .where('status', '=', HELD)
        .executeTakeFirst();
    },
    /** As `findHeld`, locked. A lease ended while this waited for its lock is not returned: PostgreSQL re-reads the row. */
    lockHeld(db: Db, conversationId: string): Promise<ConversationLocksTable | undefined> {
      return lock(db).where('conversation_id', '=', conversationId).where('status', '=', HELD).returningAll().executeTakeFirst();
    },
    lockById(db: Db, id: string): Promise<ConversationLocksTable | undefined> {
      return lock(db).where('id', '=', id).returningAll().executeTakeFirst();
    },
    /**
     * Inserts unless the conversation has a `held` lease; answers whether this call inserted it. On
     * PostgreSQL a concurrent insert makes this wait for that transaction, then do nothing.
     */
    async insertIfFree(db: Db, row: ConversationLocksTable): Promise<boolean> {
      const result = await db
        .insertInto('conversation_locks')
        .values(row)
        // The target names the partial unique index, predicate included and written as the index's own
        // (SQLite matches it as text: a bound parameter in its place matches no index).
        .onConflict((conflict) =>
          conflict
            .column('conversation_id')
            .where(sql<boolean>`status = 'held'`)
            .doNothing(),
        )
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    async update(db: Db, id: string, changes: LockChanges): Promise<void> {
      await db.updateTable('conversation_locks').set(changes).where('id', '=', id).execute();
    },
  };
}

export type ConversationLocksStore = ReturnType<typeof createConversationLocksStore>;
