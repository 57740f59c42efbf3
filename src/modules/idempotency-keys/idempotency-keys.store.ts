import type { Db } from '../../db/connect.ts';
import type { IdempotencyKeysTable } from '../../db/schema.ts';

/** The row's identity: a key means something only inside one organization and one mode. */
export interface KeyScope {
  organizationId: string;
  mode: string;
  key: string;
}

function updateKey(db: Db, scope: KeyScope) {
  return db.updateTable('idempotency_keys').where('organization_id', '=', scope.organizationId).where('mode', '=', scope.mode).where('key', '=', scope.key);
}

function deleteKey(db: Db, scope: KeyScope) {
  return db.deleteFrom('idempotency_keys').where('organization_id', '=', scope.organizationId).where('mode', '=', scope.mode).where('key', '=', scope.key);
}

export function createIdempotencyKeysStore() {
  return {
    /** Throws a unique violation when the key already has a row, expired or not. */
    async insert(db: Db, row: IdempotencyKeysTable): Promise<void> {
      await db.insertInto('idempotency_keys').values(row).execute();
    },

    find(db: Db, scope: KeyScope): Promise<IdempotencyKeysTable | undefined> {
      return db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('organization_id', '=', scope.organizationId)
        .where('mode', '=', scope.mode)
        .where('key', '=', scope.key)
        .executeTakeFirst();
    },

    /** Moves the lock of an in-flight row from `fromToken` to a new holder; false when someone else moved it first. */
    async takeOver(db: Db, scope: KeyScope, fromToken: string, to: { lockToken: string; lockedAt: string; expiresAt: string }): Promise<boolean> {
      const result = await updateKey(db, scope)
        .set({ lock_token: to.lockToken, locked_at: to.lockedAt, expires_at: to.expiresAt })
        .where('lock_token', '=', fromToken)
        .where('completed_at', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    /** Records the response, only for the holder of the lock: a taken-over execution cannot overwrite its successor. */
    async complete(db: Db, scope: KeyScope, lockToken: string, response: { status: number; body: string; completedAt: string }): Promise<boolean> {
      const result = await updateKey(db, scope)
        .set({ response_status: response.status, response_body: response.body, completed_at: response.completedAt })
        .where('lock_token', '=', lockToken)
        .where('completed_at', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    async release(db: Db, scope: KeyScope, lockToken: string): Promise<boolean> {
      const result = await deleteKey(db, scope).where('lock_token', '=', lockToken).where('completed_at', 'is', null).executeTakeFirst();
      return Number(result.numDeletedRows) === 1;
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
