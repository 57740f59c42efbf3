import { sql } from 'kysely';
import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { ConversationLocksTable } from '../../db/schema.ts';

export type LockChanges = Partial<Omit<ConversationLocksTable, 'id' | 'organization_id' | 'connection_id' | 'conversation_id' | 'created_at'>>;

// A literal, not a parameter, for the partial index on held leases (every send asks): compared with
// a parameter, SQLite matches the index by reading the parameter's value, and so compiles the
// statement again on every run (docs/benchmarks.md, the tenth pass).
const HELD = sql.lit('held');

// Compiled once (db/compiled-query.ts): every send asks whether its conversation is locked.
const findHeld = compileOnce((db, p: { organizationId: string; conversationId: string }) =>
  db
    .selectFrom('conversation_locks')
    .selectAll()
    .where('organization_id', '=', p.organizationId)
    .where('conversation_id', '=', p.conversationId)
    .where('status', '=', HELD),
);
/*
 * The locking reads hold their rows until the transaction ends (`dialect.lockRows`: `for no key update`
 * on PostgreSQL; SQLite's writing transactions hold the write lock from `begin immediate`), so that a
 * renewal, a release and a timer never act on one lease at once.
 */
const lockHeld = compileOnce((db, p: { conversationId: string }, dialect) =>
  dialect.lockRows(db.selectFrom('conversation_locks').selectAll().where('conversation_id', '=', p.conversationId).where('status', '=', HELD)),
);
const lockById = compileOnce((db, p: { id: string }, dialect) => dialect.lockRows(db.selectFrom('conversation_locks').selectAll().where('id', '=', p.id)));
const lockHeldBy = compileOnce((db, p: { organizationId: string; memberId: string }, dialect) =>
  dialect.lockRows(
    db
      .selectFrom('conversation_locks')
      .selectAll()
      .where('organization_id', '=', p.organizationId)
      .where('holder_member_id', '=', p.memberId)
      .where('status', '=', HELD)
      .orderBy('id'),
  ),
);

export function createConversationLocksStore() {
  return {
    /** The conversation's `held` lease, whether or not its deadline has passed. */
    findHeld(db: Db, organizationId: string, conversationId: string): Promise<ConversationLocksTable | undefined> {
      return findHeld.first(db, { organizationId, conversationId });
    },
    /** As `findHeld`, locked. A lease ended while this waited for its lock is not returned: PostgreSQL re-reads the row. */
    lockHeld(db: Db, conversationId: string): Promise<ConversationLocksTable | undefined> {
      return lockHeld.first(db, { conversationId });
    },
    /** Every `held` lease of a member, locked. */
    lockHeldBy(db: Db, organizationId: string, memberId: string): Promise<ConversationLocksTable[]> {
      return lockHeldBy.all(db, { organizationId, memberId });
    },
    lockById(db: Db, id: string): Promise<ConversationLocksTable | undefined> {
      return lockById.first(db, { id });
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
