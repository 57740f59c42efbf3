import type { Db, Trx } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { RecentReads } from '../../lib/recent-reads.ts';
import type { Principal } from '../credentials/principal.ts';
import { OAUTH_FORBIDDEN_SCOPES, SCOPES, type Scope } from '../credentials/scopes.schemas.ts';
import type { OauthTokensStore } from './oauth-tokens.store.ts';

export const OAUTH_TOKEN_PREFIX = 'oat_';

export interface IssuedOauthToken {
  id: string;
  token: string;
  expiresAt: string;
  scopes: Scope[];
}

/**
 * An authenticated token is remembered for a second (by its hash), its expiry still checked on every
 * request. Revoking it forgets it at once in this process; another process may accept it for at
 * most this long.
 */
export const OAUTH_CACHE_TTL_MS = 1000;
const OAUTH_CACHE_MAX = 10_000;

interface AuthenticatedToken {
  principal: Principal;
  expiresAt: string;
}

export function createOauthTokensService(deps: { db: Db; store: OauthTokensStore; clock: Clock }) {
  const { db, store, clock } = deps;
  const authenticated = new RecentReads<AuthenticatedToken>({ clock, ttlMs: OAUTH_CACHE_TTL_MS, maxEntries: OAUTH_CACHE_MAX });
  const tokenTags = (token: AuthenticatedToken) => [token.principal.credentialId];

  /** An unknown or revoked token throws here, so only a live one is ever remembered. */
  async function resolve(hash: string): Promise<AuthenticatedToken> {
    const row = await store.findByHash(db, hash);
    if (!row) throw new AppError('credential_invalid', 'The OAuth access token is not valid.');
    if (row.revoked_at) throw new AppError('credential_revoked', 'The OAuth access token was revoked.');
    // Defence in depth: even a row written with a forbidden scope never grants it.
    const scopes = (JSON.parse(row.scopes) as Scope[]).filter((scope) => !OAUTH_FORBIDDEN_SCOPES.includes(scope));
    return {
      expiresAt: row.expires_at,
      principal: {
        kind: 'oauth_token',
        credentialId: row.id,
        organizationId: row.organization_id,
        memberId: null,
        role: null,
        mode: null,
        connectionId: null,
        scopes: new Set(scopes),
        resource: row.resource,
      },
    };
  }

  return {
    /**
     * Stores a new access token for a consent given to an OAuth client. The grant flow that calls this
     * is not part of the API yet; the rule that such a token can never manage keys lives here.
     */
    async issue(
      trx: Trx,
      input: { organizationId: string; clientName: string; scopes: readonly Scope[]; ttlMs: number; resource?: string | null },
    ): Promise<IssuedOauthToken> {
      const forbidden = input.scopes.find((scope) => OAUTH_FORBIDDEN_SCOPES.includes(scope) || !SCOPES.includes(scope));
      if (forbidden) {
        throw new AppError('validation_failed', `An OAuth token cannot hold ${forbidden}.`, {
          param: '/scopes',
          details: [{ param: '/scopes', code: 'invalid_value', message: `${forbidden} is never granted to an OAuth token` }],
        });
      }
      const now = clock.now();
      const token = OAUTH_TOKEN_PREFIX + randomToken(32);
      const row = {
        id: newId('oauthToken', now.getTime()),
        organization_id: input.organizationId,
        client_name: input.clientName,
        scopes: JSON.stringify(input.scopes),
        token_hash: sha256Hex(token),
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + input.ttlMs).toISOString(),
        revoked_at: null,
        resource: input.resource ?? null,
      };
      await store.insert(trx, row);
      return { id: row.id, token, expiresAt: row.expires_at, scopes: [...input.scopes] };
    },

    async revoke(organizationId: string, id: string): Promise<boolean> {
      const revoked = await store.revoke(db, organizationId, id, clock.now().toISOString());
      authenticated.forget(id);
      return revoked;
    },

    async authenticate(token: string): Promise<Principal> {
      const hash = sha256Hex(token);
      const { principal, expiresAt } = await authenticated.read(hash, () => resolve(hash), tokenTags);
      if (expiresAt <= clock.now().toISOString()) throw new AppError('credential_expired', 'The OAuth access token has expired.');
      return principal;
    },
  };
}

export type OauthTokensService = ReturnType<typeof createOauthTokensService>;
