import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * An OAuth access token's audience (RFC 8707 `resource`): the API it was issued for, `<base>/v1` or
 * `<base>/mcp`. A token is accepted only where its resource says (docs/oauth.md); null for tokens
 * issued before there was a grant flow, which the /v1 API accepts.
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('oauth_tokens').addColumn('resource', 'text').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('oauth_tokens').dropColumn('resource').execute();
}
