/**
 * Credentials: the four kinds of bearer credential, the scope catalogue, the role→scope table, and
 * resolving a presented credential into a `Principal`. Each kind's records live in its own module
 * (api-keys, oauth-tokens, auth); this module only dispatches to them.
 */
import type { ApiKeysService } from '../api-keys/index.ts';
import type { AuthService } from '../auth/index.ts';
import { DASHBOARD_TOKEN_PREFIX } from '../auth/index.ts';
import type { Module } from '../module.ts';
import { OAUTH_TOKEN_PREFIX, type OauthTokensService } from '../oauth-tokens/index.ts';
import { createCredentialsService, type CredentialsService } from './credentials.service.ts';

export function createCredentialsModule(deps: {
  apiKeys: Pick<ApiKeysService, 'authenticate'>;
  auth: Pick<AuthService, 'authenticate'>;
  oauthTokens: Pick<OauthTokensService, 'authenticate'>;
}): Module<CredentialsService> {
  const service = createCredentialsService({
    apiKey: deps.apiKeys.authenticate,
    dashboardToken: deps.auth.authenticate,
    oauthToken: deps.oauthTokens.authenticate,
    prefixes: { dashboardToken: DASHBOARD_TOKEN_PREFIX, oauthToken: OAUTH_TOKEN_PREFIX },
  });
  return { name: 'credentials', service };
}

export { createCredentialsService, type CredentialsService } from './credentials.service.ts';
export type { Actor, Principal } from './principal.ts';
