import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { DashboardSessionsTable } from '../../db/schema.ts';

// Compiled once (db/compiled-query.ts): every dashboard request resolves its token.
const byAccessHash = compileOnce((db, p: { hash: string }) => db.selectFrom('dashboard_sessions').selectAll().where('access_token_hash', '=', p.hash));

export function createAuthStore() {
  return {
    async insertSession(db: Db, row: DashboardSessionsTable): Promise<void> {
      await db.insertInto('dashboard_sessions').values(row).execute();
    },
    findByAccessHash(db: Db, hash: string): Promise<DashboardSessionsTable | undefined> {
      return byAccessHash.first(db, { hash });
    },
    findByRefreshHash(db: Db, hash: string): Promise<DashboardSessionsTable | undefined> {
      return db.selectFrom('dashboard_sessions').selectAll().where('refresh_token_hash', '=', hash).executeTakeFirst();
    },
    /** The session whose last rotation replaced this refresh token. */
    findByPreviousRefreshHash(db: Db, hash: string): Promise<DashboardSessionsTable | undefined> {
      return db.selectFrom('dashboard_sessions').selectAll().where('previous_refresh_token_hash', '=', hash).executeTakeFirst();
    },
    /** Swaps in new tokens only if the refresh token is still the current one: a race loses cleanly. */
    async rotateTokens(
      db: Db,
      id: string,
      previousRefreshHash: string,
      next: Pick<DashboardSessionsTable, 'access_token_hash' | 'access_expires_at' | 'refresh_token_hash' | 'rotated_at'>,
    ): Promise<boolean> {
      const result = await db
        .updateTable('dashboard_sessions')
        .set({ ...next, previous_refresh_token_hash: previousRefreshHash })
        .where('id', '=', id)
        .where('refresh_token_hash', '=', previousRefreshHash)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    async sessionIdsOf(db: Db, memberId: string): Promise<string[]> {
      return (await db.selectFrom('dashboard_sessions').select('id').where('member_id', '=', memberId).execute()).map((row) => row.id);
    },
    async revoke(db: Db, id: string, at: string): Promise<void> {
      await db.updateTable('dashboard_sessions').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).execute();
    },
  };
}

export type AuthStore = ReturnType<typeof createAuthStore>;
