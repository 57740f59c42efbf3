import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Connector accounts (docs/automations.md#connectors): an organization's credentials for another
 * system, which `http_request` steps call through.
 *
 * - `credentials` is every field but `base_url`, as JSON, sealed with the master key and the
 *   account's id as additional data (a sealed value copied onto another row does not open). A
 *   disconnect sets it to null: the secrets are wiped, the row stays for the runs that name it.
 * - `allowed_hosts` (JSON array) is where a request through the account may go.
 * - `mode` binds the account like a key: a test key's accounts are test, and only test automations
 *   use them.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('connector_accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('connection_id', 'text')
    .addColumn('connector', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('base_url', 'text', (c) => c.notNull())
    .addColumn('allowed_hosts', 'text', (c) => c.notNull())
    .addColumn('credentials', 'text')
    .addColumn('secret_hint', 'text')
    .addColumn('last_verified_at', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('connector_accounts_organization').on('connector_accounts').columns(['organization_id', 'id']).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('connector_accounts').execute();
}
