import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { ProviderWebhooksTable } from '../../db/schema.ts';

const insertIfAbsent = compileOnce((db, row: ProviderWebhooksTable) =>
  db
    .insertInto('provider_webhooks')
    .values(row)
    .onConflict((conflict) => conflict.column('body_sha256').doNothing()),
);
const byId = compileOnce((db, p: { id: string }) => db.selectFrom('provider_webhooks').selectAll().where('id', '=', p.id));
const markProcessed = compileOnce((db, p: { id: string; outcome: { processed_at: string; updates: number; error: string | null } }) =>
  db.updateTable('provider_webhooks').set(p.outcome).where('id', '=', p.id),
);

export function createProviderWebhooksStore() {
  return {
    /** Inserts unless the same bytes were received before; answers whether this call inserted them. */
    async insertIfAbsent(db: Db, row: ProviderWebhooksTable): Promise<boolean> {
      return (await insertIfAbsent.run(db, row)) > 0;
    },
    find(db: Db, id: string): Promise<ProviderWebhooksTable | undefined> {
      return byId.first(db, { id });
    },
    async markProcessed(db: Db, id: string, outcome: { processed_at: string; updates: number; error: string | null }): Promise<void> {
      await markProcessed.run(db, { id, outcome });
    },
  };
}

export type ProviderWebhooksStore = ReturnType<typeof createProviderWebhooksStore>;
