import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { OauthTokensTable } from '../../db/schema.ts';

// Compiled once (db/compiled-query.ts): every request with an OAuth token resolves it.
const byHash = compileOnce((db, p: { hash: string }) => db.selectFrom('oauth_tokens').selectAll().where('token_hash', '=', p.hash));
const insertRow = compileOnce((db, row: OauthTokensTable) => db.insertInto('oauth_tokens').values(row));

export function createOauthTokensStore() {
  return {
    async insert(db: Db, row: OauthTokensTable): Promise<void> {
      await insertRow.run(db, row);
    },
    findByHash(db: Db, hash: string): Promise<OauthTokensTable | undefined> {
      return byHash.first(db, { hash });
    },
    async revoke(db: Db, organizationId: string, id: string, at: string): Promise<boolean> {
      const result = await db
        .updateTable('oauth_tokens')
        .set({ revoked_at: at })
        .where('organization_id', '=', organizationId)
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    /** Revokes every live token of a grant; answers the ids it revoked. */
    async revokeGrant(db: Db, grantId: string, at: string): Promise<string[]> {
      const rows = await db
        .updateTable('oauth_tokens')
        .set({ revoked_at: at })
        .where('grant_id', '=', grantId)
        .where('revoked_at', 'is', null)
        .returning('id')
        .execute();
      return rows.map((row) => row.id);
    },
  };
}

export type OauthTokensStore = ReturnType<typeof createOauthTokensStore>;
