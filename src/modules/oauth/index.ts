/**
 * The OAuth 2.1 authorization server (docs/oauth.md): discovery metadata (RFC 8414, RFC 9728),
 * clients (dynamic registration, RFC 7591, and client ID metadata documents), the authorization
 * code flow with PKCE S256 and resource indicators (RFC 8707) behind a server-rendered sign-in and
 * consent page, the token endpoint (single-use codes, rotating refresh tokens with reuse detection),
 * revocation (RFC 7009), and the organization's authorized apps. Owns the clients, grants, codes and
 * refresh tokens; the access tokens it issues are the oauth-tokens module's.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { createGuardedHttp } from '../../lib/guarded-http.ts';
import type { MembersService } from '../members/index.ts';
import type { Module } from '../module.ts';
import { createClientDocuments } from './oauth-client-documents.ts';
import { oauthJobs } from './oauth.job.ts';
import { registerOauthRoutes } from './oauth.routes.ts';
import { createOauthService, type OauthService, type OauthServiceDeps } from './oauth.service.ts';
import { createOauthStore } from './oauth.store.ts';

export function createOauthModule(
  deps: Omit<OauthServiceDeps, 'store' | 'clientDocuments'> & {
    db: Db;
    clock: Clock;
    secrets: SecretBox;
    /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: client ID metadata documents on private addresses (and over http), for development and tests only. */
    allowPrivateNetworks: boolean;
    members: OauthServiceDeps['members'] & Pick<MembersService, 'onRemoved'>;
  },
): Module<OauthService> {
  const http = createGuardedHttp({ allowPrivateNetworks: deps.allowPrivateNetworks });
  const clientDocuments = createClientDocuments({ http, clock: deps.clock, allowPrivateNetworks: deps.allowPrivateNetworks });
  const service = createOauthService({ ...deps, store: createOauthStore(), clientDocuments });
  deps.members.onRemoved((trx, member) => service.revokeGrantsOf(trx, member));
  return {
    name: 'oauth',
    service,
    routes: (server) => registerOauthRoutes(server, service),
    jobs: oauthJobs(service),
    close: () => http.close(),
  };
}

export type { OauthService } from './oauth.service.ts';
export { ACCESS_TOKEN_TTL_MS, REFRESH_TOKEN_TTL_MS, OAUTH_SCOPES } from './oauth.service.ts';
