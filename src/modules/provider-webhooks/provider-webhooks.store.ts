import type { Db } from '../../db/connect.ts';
import type { ProviderWebhooksTable } from '../../db/schema.ts';

export function createProviderWebhooksStore() {
  return {
    /** Inserts unless the same bytes were received before; answers whether this call inserted them. */
    async insertIfAbsent(db: Db, row: ProviderWebhooksTable): Promise<boolean> {
      const result = await db
        .insertInto('provider_webhooks')
        .values(row)
        .onConflict((conflict) => conflict.column('body_sha256').doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    find(db: Db, id: string): Promise<ProviderWebhooksTable | undefined> {
      return db.selectFrom('provider_webhooks').selectAll().where('id', '=', id).executeTakeFirst();
    },
    async markProcessed(db: Db, id: string, outcome: { processed_at: string; updates: number; error: string | null }): Promise<void> {
      await db.updateTable('provider_webhooks').set(outcome).where('id', '=', id).execute();
    },
  };
}

export type ProviderWebhooksStore = ReturnType<typeof createProviderWebhooksStore>;
