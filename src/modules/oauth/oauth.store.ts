import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { compiledPaging, type PageRequest } from '../../db/pagination.ts';
import type { OauthAuthorizationCodesTable, OauthClientsTable, OauthGrantsTable, OauthRefreshTokensTable } from '../../db/schema.ts';

// Compiled once (db/compiled-query.ts): each authorization and token request runs these.
const clientById = compileOnce((db, p: { id: string }) => db.selectFrom('oauth_clients').selectAll().where('id', '=', p.id));
const insertClient = compileOnce((db, row: OauthClientsTable) => db.insertInto('oauth_clients').values(row));
const touchClient = compileOnce((db, p: { id: string; at: string }) => db.updateTable('oauth_clients').set({ last_used_at: p.at }).where('id', '=', p.id));

const insertCode = compileOnce((db, row: OauthAuthorizationCodesTable) => db.insertInto('oauth_authorization_codes').values(row));
// Locked: two exchanges of one code must not both see it unused.
const lockCode = compileOnce((db, p: { hash: string }, dialect) =>
  dialect.lockRows(db.selectFrom('oauth_authorization_codes').selectAll().where('code_hash', '=', p.hash)),
);
const markCodeUsed = compileOnce((db, p: { hash: string; at: string; grantId: string }) =>
  db.updateTable('oauth_authorization_codes').set({ used_at: p.at, grant_id: p.grantId }).where('code_hash', '=', p.hash).where('used_at', 'is', null),
);

const insertGrant = compileOnce((db, row: OauthGrantsTable) => db.insertInto('oauth_grants').values(row));
const grantById = compileOnce((db, p: { id: string }) => db.selectFrom('oauth_grants').selectAll().where('id', '=', p.id));
const grantInOrganization = compileOnce((db, p: { organizationId: string; id: string }) =>
  db.selectFrom('oauth_grants').selectAll().where('organization_id', '=', p.organizationId).where('id', '=', p.id).where('revoked_at', 'is', null),
);
const touchGrant = compileOnce((db, p: { id: string; at: string }) => db.updateTable('oauth_grants').set({ last_used_at: p.at }).where('id', '=', p.id));
const revokeGrantRow = compileOnce((db, p: { id: string; at: string }) =>
  db.updateTable('oauth_grants').set({ revoked_at: p.at }).where('id', '=', p.id).where('revoked_at', 'is', null),
);
const grantsPage = compiledPaging(
  (db, p: { organizationId: string; memberId: string | undefined }) => {
    const query = db.selectFrom('oauth_grants').selectAll().where('organization_id', '=', p.organizationId).where('revoked_at', 'is', null);
    return p.memberId === undefined ? query : query.where('member_id', '=', p.memberId);
  },
  { id: 'id', createdAt: 'created_at' },
);

const insertRefresh = compileOnce((db, row: OauthRefreshTokensTable) => db.insertInto('oauth_refresh_tokens').values(row));
const refreshByHash = compileOnce((db, p: { hash: string }) => db.selectFrom('oauth_refresh_tokens').selectAll().where('token_hash', '=', p.hash));
const markRefreshUsed = compileOnce((db, p: { id: string; at: string }) =>
  db.updateTable('oauth_refresh_tokens').set({ used_at: p.at }).where('id', '=', p.id).where('used_at', 'is', null),
);

export function createOauthStore() {
  return {
    findClient(db: Db, id: string): Promise<OauthClientsTable | undefined> {
      return clientById.first(db, { id });
    },
    async insertClient(db: Db, row: OauthClientsTable): Promise<void> {
      await insertClient.run(db, row);
    },
    async touchClient(db: Db, id: string, at: string): Promise<void> {
      await touchClient.run(db, { id, at });
    },

    async insertCode(db: Db, row: OauthAuthorizationCodesTable): Promise<void> {
      await insertCode.run(db, row);
    },
    lockCode(db: Db, hash: string): Promise<OauthAuthorizationCodesTable | undefined> {
      return lockCode.first(db, { hash });
    },
    /** Answers whether this call was the one that used the code. */
    async markCodeUsed(db: Db, hash: string, at: string, grantId: string): Promise<boolean> {
      return (await markCodeUsed.run(db, { hash, at, grantId })) === 1;
    },

    async insertGrant(db: Db, row: OauthGrantsTable): Promise<void> {
      await insertGrant.run(db, row);
    },
    findGrant(db: Db, id: string): Promise<OauthGrantsTable | undefined> {
      return grantById.first(db, { id });
    },
    /** A live grant of the organization, else undefined (another organization's is not found). */
    findActiveGrant(db: Db, organizationId: string, id: string): Promise<OauthGrantsTable | undefined> {
      return grantInOrganization.first(db, { organizationId, id });
    },
    async touchGrant(db: Db, id: string, at: string): Promise<void> {
      await touchGrant.run(db, { id, at });
    },
    /** Answers whether the grant was live until now. */
    async revokeGrant(db: Db, id: string, at: string): Promise<boolean> {
      return (await revokeGrantRow.run(db, { id, at })) === 1;
    },
    listGrants(db: Db, organizationId: string, memberId: string | undefined, page: PageRequest) {
      return grantsPage(db, { organizationId, memberId }, page);
    },
    /** The live grants of a member, for a removal to revoke. Rare: plain Kysely. */
    async activeGrantIdsOfMember(db: Db, organizationId: string, memberId: string): Promise<string[]> {
      const rows = await db
        .selectFrom('oauth_grants')
        .select('id')
        .where('organization_id', '=', organizationId)
        .where('member_id', '=', memberId)
        .where('revoked_at', 'is', null)
        .execute();
      return rows.map((row) => row.id);
    },

    async insertRefreshToken(db: Db, row: OauthRefreshTokensTable): Promise<void> {
      await insertRefresh.run(db, row);
    },
    findRefreshToken(db: Db, hash: string): Promise<OauthRefreshTokensTable | undefined> {
      return refreshByHash.first(db, { hash });
    },
    /** Answers whether this call was the one that rotated the token. */
    async markRefreshUsed(db: Db, id: string, at: string): Promise<boolean> {
      return (await markRefreshUsed.run(db, { id, at })) === 1;
    },

    /** Retention (the hourly purge): what can no longer be used. Plain Kysely: it runs once an hour. */
    async purge(db: Db, cutoffs: { codesBefore: string; refreshBefore: string; clientsUnusedSince: string; grantsUnusedSince: string }, limit: number) {
      const codes = await db
        .deleteFrom('oauth_authorization_codes')
        .where('code_hash', 'in', (q) =>
          q.selectFrom('oauth_authorization_codes').select('code_hash').where('expires_at', '<', cutoffs.codesBefore).limit(limit),
        )
        .executeTakeFirst();
      const refresh = await db
        .deleteFrom('oauth_refresh_tokens')
        .where('id', 'in', (q) => q.selectFrom('oauth_refresh_tokens').select('id').where('expires_at', '<', cutoffs.refreshBefore).limit(limit))
        .executeTakeFirst();
      const clients = await db
        .deleteFrom('oauth_clients')
        .where('id', 'in', (q) => q.selectFrom('oauth_clients').select('id').where('last_used_at', '<', cutoffs.clientsUnusedSince).limit(limit))
        .executeTakeFirst();
      const grants = await db
        .deleteFrom('oauth_grants')
        .where('id', 'in', (q) =>
          q
            .selectFrom('oauth_grants')
            .select('id')
            .where((w) => w.or([w('revoked_at', '<', cutoffs.grantsUnusedSince), w('last_used_at', '<', cutoffs.grantsUnusedSince)]))
            .limit(limit),
        )
        .executeTakeFirst();
      return [codes, refresh, clients, grants].reduce((sum, result) => sum + Number(result.numDeletedRows), 0);
    },
  };
}

export type OauthStore = ReturnType<typeof createOauthStore>;
