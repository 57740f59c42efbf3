import type { Db, Trx } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
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

export function createOauthTokensService(deps: { db: Db; store: OauthTokensStore; clock: Clock }) {
  const { db, store, clock } = deps;
  return {
    /**
     * Stores a new access token for a consent given to an OAuth client. The grant flow that calls this
     * is not part of the API yet; the rule that such a token can never manage keys lives here.
     */
    async issue(trx: Trx, input: { organizationId: string; clientName: string; scopes: readonly Scope[]; ttlMs: number }): Promise<IssuedOauthToken> {
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
      };
      await store.insert(trx, row);
      return { id: row.id, token, expiresAt: row.expires_at, scopes: [...input.scopes] };
    },

    async revoke(organizationId: string, id: string): Promise<boolean> {
      return store.revoke(db, organizationId, id, clock.now().toISOString());
    },

    async authenticate(token: string): Promise<Principal> {
      const row = await store.findByHash(db, sha256Hex(token));
      if (!row) throw new AppError('credential_invalid', 'The OAuth access token is not valid.');
      if (row.revoked_at) throw new AppError('credential_revoked', 'The OAuth access token was revoked.');
      if (row.expires_at <= clock.now().toISOString()) throw new AppError('credential_expired', 'The OAuth access token has expired.');
      // Defence in depth: even a row written with a forbidden scope never grants it.
      const scopes = (JSON.parse(row.scopes) as Scope[]).filter((scope) => !OAUTH_FORBIDDEN_SCOPES.includes(scope));
      return {
        kind: 'oauth_token',
        credentialId: row.id,
        organizationId: row.organization_id,
        memberId: null,
        role: null,
        mode: null,
        connectionId: null,
        scopes: new Set(scopes),
      };
    },
  };
}

export type OauthTokensService = ReturnType<typeof createOauthTokensService>;
