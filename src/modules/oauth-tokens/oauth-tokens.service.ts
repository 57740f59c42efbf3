import type { Db, Trx } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { RecentReads } from '../../lib/recent-reads.ts';
import type { Principal } from '../credentials/principal.ts';
import { OAUTH_FORBIDDEN_SCOPES, ROLE_SCOPES, SCOPES, type Role, type Scope } from '../credentials/scopes.schemas.ts';
import type { MembersService } from '../members/index.ts';
import type { OauthTokensStore } from './oauth-tokens.store.ts';

export const OAUTH_TOKEN_PREFIX = 'oat_';

export interface IssuedOauthToken {
  id: string;
  token: string;
  expiresAt: string;
  scopes: Scope[];
}

/** The consent a token is issued under (the authorization server's grant): its member's current role bounds the token. */
export interface OauthTokenGrant {
  id: string;
  memberId: string;
  clientId: string;
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
  memberId: string | null;
}

export function createOauthTokensService(deps: { db: Db; store: OauthTokensStore; clock: Clock; members: Pick<MembersService, 'findRole'> }) {
  const { db, store, clock, members } = deps;
  const authenticated = new RecentReads<AuthenticatedToken>({ clock, ttlMs: OAUTH_CACHE_TTL_MS, maxEntries: OAUTH_CACHE_MAX });
  const tokenTags = (token: AuthenticatedToken) => [token.principal.credentialId];
  // The effective scopes of a remembered token for each role its member has had: made once per
  // (token, role) rather than on every request.
  const effective = new WeakMap<Principal, Map<Role, Principal>>();

  /** An unknown or revoked token throws here, so only a live one is ever remembered. */
  async function resolve(hash: string): Promise<AuthenticatedToken> {
    const row = await store.findByHash(db, hash);
    if (!row) throw new AppError('credential_invalid', 'The OAuth access token is not valid.');
    if (row.revoked_at) throw new AppError('credential_revoked', 'The OAuth access token was revoked.');
    // Defence in depth: even a row written with a forbidden scope never grants it.
    const scopes = (JSON.parse(row.scopes) as Scope[]).filter((scope) => !OAUTH_FORBIDDEN_SCOPES.includes(scope));
    return {
      expiresAt: row.expires_at,
      memberId: row.member_id,
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
        oauthClient: { id: row.client_id, name: row.client_name, grantId: row.grant_id, memberId: row.member_id },
      },
    };
  }

  /** The token's scopes narrowed to what the member's role holds now. */
  function boundByRole(principal: Principal, role: Role): Principal {
    let byRole = effective.get(principal);
    if (!byRole) effective.set(principal, (byRole = new Map<Role, Principal>()));
    let bound = byRole.get(role);
    if (!bound) {
      const allowed = ROLE_SCOPES[role];
      bound = { ...principal, scopes: new Set([...principal.scopes].filter((scope) => allowed.includes(scope))) };
      byRole.set(role, bound);
    }
    return bound;
  }

  return {
    /**
     * Stores a new access token: for a grant of the authorization server (docs/oauth.md), or, without
     * `grant`, a token bound to no member (its scopes only). The rule that such a token can never
     * manage keys lives here.
     */
    async issue(
      trx: Trx,
      input: {
        organizationId: string;
        clientName: string;
        scopes: readonly Scope[];
        ttlMs: number;
        resource?: string | null;
        grant?: OauthTokenGrant;
      },
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
        grant_id: input.grant?.id ?? null,
        member_id: input.grant?.memberId ?? null,
        client_id: input.grant?.clientId ?? null,
      };
      await store.insert(trx, row);
      return { id: row.id, token, expiresAt: row.expires_at, scopes: [...input.scopes] };
    },

    async revoke(organizationId: string, id: string): Promise<boolean> {
      const revoked = await store.revoke(db, organizationId, id, clock.now().toISOString());
      authenticated.forget(id);
      return revoked;
    },

    /** Revokes every token of a grant, in the caller's transaction (a revoked grant, a replayed code, a reused refresh token). */
    async revokeGrant(trx: Trx, grantId: string): Promise<number> {
      const ids = await store.revokeGrant(trx, grantId, clock.now().toISOString());
      for (const id of ids) authenticated.forget(id);
      return ids.length;
    },

    /**
     * RFC 7009 for an access token: revokes it when it was issued to `clientId`. Answers whether the
     * string was an access token at all (revoked now, before, or not this client's to revoke).
     */
    async revokePresented(token: string, clientId: string): Promise<boolean> {
      const row = await store.findByHash(db, sha256Hex(token));
      if (!row) return false;
      if (row.client_id === clientId && !row.revoked_at) {
        await store.revoke(db, row.organization_id, row.id, clock.now().toISOString());
        authenticated.forget(row.id);
      }
      return true;
    },

    async authenticate(token: string): Promise<Principal> {
      const hash = sha256Hex(token);
      const { principal, expiresAt, memberId } = await authenticated.read(hash, () => resolve(hash), tokenTags);
      if (expiresAt <= clock.now().toISOString()) throw new AppError('credential_expired', 'The OAuth access token has expired.');
      if (memberId === null) return principal;
      // The member is read on every request (never remembered), like a dashboard token's: a demotion
      // narrows the token at its very next request, and a removal ends it.
      const member = await members.findRole(principal.organizationId, memberId);
      if (!member) throw new AppError('credential_revoked', 'The member who authorized this app is no longer in the organization.');
      return boundByRole(principal, member.role);
    },
  };
}

export type OauthTokensService = ReturnType<typeof createOauthTokensService>;
