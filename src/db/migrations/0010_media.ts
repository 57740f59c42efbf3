import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Media: files uploaded through the API or sent by customers, whose bytes live in the media storage
 * (not in the database), and the provider's ids for a file per sending number, which the provider
 * keeps for 30 days.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('media')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('connection_id', 'text', (c) => c.references('connections.id'))
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('mime_type', 'text', (c) => c.notNull())
    .addColumn('size', 'integer')
    .addColumn('sha256', 'text')
    .addColumn('filename', 'text')
    .addColumn('storage_key', 'text')
    .addColumn('provider_media_id', 'text')
    .addColumn('provider_sha256', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // One row per media a number received, however often its webhook arrives. NULLs are distinct on
  // both backends, so uploads (no provider id) never collide.
  await db.schema.createIndex('media_inbound').on('media').columns(['connection_id', 'provider_media_id']).unique().execute();
  await db.schema.createIndex('media_organization').on('media').columns(['organization_id', 'id']).execute();

  await db.schema
    .createTable('media_uploads')
    .addColumn('media_id', 'text', (c) => c.notNull().references('media.id'))
    .addColumn('connection_id', 'text', (c) => c.notNull().references('connections.id'))
    .addColumn('provider_media_id', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('media_uploads_pkey', ['media_id', 'connection_id'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('media_uploads').execute();
  await db.schema.dropTable('media').execute();
}
