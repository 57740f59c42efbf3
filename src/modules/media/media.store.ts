import type { Db } from '../../db/connect.ts';
import type { MediaTable, MediaUploadsTable } from '../../db/schema.ts';

export type MediaChanges = Partial<Omit<MediaTable, 'id' | 'organization_id' | 'source' | 'created_at'>>;

export function createMediaStore() {
  return {
    find(db: Db, organizationId: string, id: string): Promise<MediaTable | undefined> {
      return db.selectFrom('media').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    },
    /** For jobs, which carry an id and no organization. */
    findById(db: Db, id: string): Promise<MediaTable | undefined> {
      return db.selectFrom('media').selectAll().where('id', '=', id).executeTakeFirst();
    },
    findInbound(db: Db, connectionId: string, providerMediaId: string): Promise<MediaTable | undefined> {
      return db.selectFrom('media').selectAll().where('connection_id', '=', connectionId).where('provider_media_id', '=', providerMediaId).executeTakeFirst();
    },
    async insert(db: Db, row: MediaTable): Promise<void> {
      await db.insertInto('media').values(row).execute();
    },
    /** Inserts unless the number already has a row for this provider media; answers whether this call inserted it. */
    async insertInboundIfAbsent(db: Db, row: MediaTable): Promise<boolean> {
      const result = await db
        .insertInto('media')
        .values(row)
        .onConflict((conflict) => conflict.columns(['connection_id', 'provider_media_id']).doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    /** Applies changes only while the media is still pending: a fetch that lost a race changes nothing. */
    async updatePending(db: Db, id: string, changes: MediaChanges): Promise<boolean> {
      const result = await db.updateTable('media').set(changes).where('id', '=', id).where('status', '=', 'pending').executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },

    findUpload(db: Db, mediaId: string, connectionId: string): Promise<MediaUploadsTable | undefined> {
      return db.selectFrom('media_uploads').selectAll().where('media_id', '=', mediaId).where('connection_id', '=', connectionId).executeTakeFirst();
    },
    /** Records the provider's id for the pair, replacing an expired one. */
    async saveUpload(db: Db, row: MediaUploadsTable): Promise<void> {
      await db
        .insertInto('media_uploads')
        .values(row)
        .onConflict((conflict) =>
          conflict
            .columns(['media_id', 'connection_id'])
            .doUpdateSet({ provider_media_id: row.provider_media_id, expires_at: row.expires_at, created_at: row.created_at }),
        )
        .execute();
    },
  };
}

export type MediaStore = ReturnType<typeof createMediaStore>;
