import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * The OAuth 2.1 authorization server (docs/oauth.md).
 *
 * - `oauth_clients`: dynamically registered clients (RFC 7591), public (PKCE, no secret).
 *   `redirect_uris` is JSON text. `last_used_at` moves at each authorization and token request; a
 *   client unused for 30 days is gone. Clients identified by a metadata document URL have no row.
 * - `oauth_grants`: one consent given by a member of an organization to a client; the family of
 *   every code, refresh token and access token issued from it. Revoking it revokes them all.
 * - `oauth_authorization_codes`: stored by hash, single use, 60 seconds; `grant_id` is set when the
 *   code is exchanged, so a replay can find (and revoke) what it produced.
 * - `oauth_refresh_tokens`: stored by hash; `used_at` set when rotated, so a second use is seen.
 * - `oauth_tokens` gains the grant, member and client of each access token (null for tokens issued
 *   outside a grant), and `audit_events` the client a change was made through.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('oauth_clients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('client_name', 'text', (c) => c.notNull())
    .addColumn('redirect_uris', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('oauth_clients_last_used').on('oauth_clients').column('last_used_at').execute();

  await db.schema
    .createTable('oauth_grants')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id'))
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_name', 'text', (c) => c.notNull())
    .addColumn('client_verified', 'integer', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('oauth_grants_organization').on('oauth_grants').columns(['organization_id', 'id']).execute();
  await db.schema.createIndex('oauth_grants_member').on('oauth_grants').columns(['member_id']).execute();

  await db.schema
    .createTable('oauth_authorization_codes')
    .addColumn('code_hash', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('member_id', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_name', 'text', (c) => c.notNull())
    .addColumn('client_verified', 'integer', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('code_challenge', 'text', (c) => c.notNull())
    .addColumn('resource', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('grant_id', 'text')
    .execute();
  await db.schema.createIndex('oauth_authorization_codes_expiry').on('oauth_authorization_codes').column('expires_at').execute();

  await db.schema
    .createTable('oauth_refresh_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('grant_id', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .execute();
  await db.schema.createIndex('oauth_refresh_tokens_grant').on('oauth_refresh_tokens').column('grant_id').execute();
  await db.schema.createIndex('oauth_refresh_tokens_expiry').on('oauth_refresh_tokens').column('expires_at').execute();

  await db.schema.alterTable('oauth_tokens').addColumn('grant_id', 'text').execute();
  await db.schema.alterTable('oauth_tokens').addColumn('member_id', 'text').execute();
  await db.schema.alterTable('oauth_tokens').addColumn('client_id', 'text').execute();
  await db.schema.createIndex('oauth_tokens_grant').on('oauth_tokens').column('grant_id').execute();

  await db.schema.alterTable('audit_events').addColumn('oauth_client_id', 'text').execute();
  await db.schema.alterTable('audit_events').addColumn('oauth_client_name', 'text').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('audit_events').dropColumn('oauth_client_name').execute();
  await db.schema.alterTable('audit_events').dropColumn('oauth_client_id').execute();
  await db.schema.dropIndex('oauth_tokens_grant').execute();
  for (const column of ['client_id', 'member_id', 'grant_id']) await db.schema.alterTable('oauth_tokens').dropColumn(column).execute();
  for (const table of ['oauth_refresh_tokens', 'oauth_authorization_codes', 'oauth_grants', 'oauth_clients']) await db.schema.dropTable(table).execute();
}
