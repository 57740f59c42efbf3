import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { ApiKeysTable } from '../../db/schema.ts';

// Compiled once (db/compiled-query.ts): every request with an API key resolves it.
const byHash = compileOnce((db, p: { hash: string }) => db.selectFrom('api_keys').selectAll().where('key_hash', '=', p.hash));

export function createApiKeysStore() {
  return {
    async insert(db: Db, row: ApiKeysTable): Promise<void> {
      await db.insertInto('api_keys').values(row).execute();
    },
    findByHash(db: Db, hash: string): Promise<ApiKeysTable | undefined> {
      return byHash.first(db, { hash });
    },
    find(db: Db, organizationId: string, id: string): Promise<ApiKeysTable | undefined> {
      return db.selectFrom('api_keys').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    },
    list(db: Db, organizationId: string, filters: { status?: 'active' | 'revoked' | undefined; mode?: string | undefined }, page: PageRequest) {
      let query = db.selectFrom('api_keys').selectAll().where('organization_id', '=', organizationId);
      if (filters.mode !== undefined) query = query.where('mode', '=', filters.mode);
      if (filters.status === 'active') query = query.where('revoked_at', 'is', null);
      if (filters.status === 'revoked') query = query.where('revoked_at', 'is not', null);
      return paginate(query, { id: 'id', createdAt: 'created_at' }, page);
    },
    /** Revokes only a key that is still active, so two concurrent revocations cannot both succeed. */
    async revoke(db: Db, organizationId: string, id: string, at: string, rotatedTo: string | null): Promise<boolean> {
      const result = await db
        .updateTable('api_keys')
        .set({ revoked_at: at, rotated_to_key_id: rotatedTo })
        .where('organization_id', '=', organizationId)
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
  };
}

export type ApiKeysStore = ReturnType<typeof createApiKeysStore>;
