import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { IdempotencyKeysTable } from '../../db/schema.ts';

/** The row's identity: a key means something only inside one organization and one mode. */
export interface KeyScope {
  organizationId: string;
  mode: string;
  key: string;
}

function deleteKey(db: Db, scope: KeyScope) {
  return db.deleteFrom('idempotency_keys').where('organization_id', '=', scope.organizationId).where('mode', '=', scope.mode).where('key', '=', scope.key);
}

// Compiled once (db/compiled-query.ts): every write request with a key claims, reads and completes
// its row.
type Held = KeyScope & { lockToken: string };
const insertRow = compileOnce((db, row: IdempotencyKeysTable) => db.insertInto('idempotency_keys').values(row));
const findRow = compileOnce((db, p: KeyScope) =>
  db.selectFrom('idempotency_keys').selectAll().where('organization_id', '=', p.organizationId).where('mode', '=', p.mode).where('key', '=', p.key),
);
// Only while the row is still in flight under this holder's lock.
const updateHeld = <S extends object>(db: Db, p: Held, changes: S) =>
  db
    .updateTable('idempotency_keys')
    .set(changes)
    .where('organization_id', '=', p.organizationId)
    .where('mode', '=', p.mode)
    .where('key', '=', p.key)
    .where('lock_token', '=', p.lockToken)
    .where('completed_at', 'is', null);
const moveLock = compileOnce((db, p: Held & { to: { lock_token: string; locked_at: string; expires_at: string } }) => updateHeld(db, p, p.to));
const completeRow = compileOnce((db, p: Held & { response: { response_status: number; response_body: string; completed_at: string } }) =>
  updateHeld(db, p, p.response),
);
const releaseRow = compileOnce((db, p: Held) => deleteKey(db, p).where('lock_token', '=', p.lockToken).where('completed_at', 'is', null));

export function createIdempotencyKeysStore() {
  return {
    /** Throws a unique violation when the key already has a row, expired or not. */
    async insert(db: Db, row: IdempotencyKeysTable): Promise<void> {
      await insertRow.run(db, row);
    },

    find(db: Db, scope: KeyScope): Promise<IdempotencyKeysTable | undefined> {
      return findRow.first(db, scope);
    },

    /** Moves the lock of an in-flight row from `fromToken` to a new holder; false when someone else moved it first. */
    async takeOver(db: Db, scope: KeyScope, fromToken: string, to: { lockToken: string; lockedAt: string; expiresAt: string }): Promise<boolean> {
      const moved = await moveLock.run(db, {
        ...scope,
        lockToken: fromToken,
        to: { lock_token: to.lockToken, locked_at: to.lockedAt, expires_at: to.expiresAt },
      });
      return moved === 1;
    },

    /** Records the response, only for the holder of the lock: a taken-over execution cannot overwrite its successor. */
    async complete(db: Db, scope: KeyScope, lockToken: string, response: { status: number; body: string; completedAt: string }): Promise<boolean> {
      const completed = await completeRow.run(db, {
        ...scope,
        lockToken,
        response: { response_status: response.status, response_body: response.body, completed_at: response.completedAt },
      });
      return completed === 1;
    },

    async release(db: Db, scope: KeyScope, lockToken: string): Promise<boolean> {
      return (await releaseRow.run(db, { ...scope, lockToken })) === 1;
    },

    /** Deletes the key's row only if it has expired, so a concurrent fresh claim is never removed. */
    async deleteIfExpired(db: Db, scope: KeyScope, now: string): Promise<void> {
      await deleteKey(db, scope).where('expires_at', '<=', now).execute();
    },

    /** Deletes at most `limit` expired rows of any organization; returns how many went. */
    async deleteExpired(db: Db, now: string, limit: number): Promise<number> {
      const result = await db
        .deleteFrom('idempotency_keys')
        .where((eb) =>
          eb(
            eb.refTuple('organization_id', 'mode', 'key'),
            'in',
            eb
              .selectFrom('idempotency_keys')
              .select(['organization_id', 'mode', 'key'])
              .where('expires_at', '<=', now)
              .limit(limit)
              .$asTuple('organization_id', 'mode', 'key'),
          ),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type IdempotencyKeysStore = ReturnType<typeof createIdempotencyKeysStore>;
