import { createOauthModule } from '../modules/oauth/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { PlatformServices } from './platform.ts';

/** The OAuth 2.1 authorization server: how third-party apps and MCP clients obtain OAuth access tokens (docs/oauth.md). */
export function buildOauth(core: Core, services: Pick<PlatformServices, 'audit' | 'auth' | 'members' | 'organizations' | 'oauthTokens'>) {
  const { db, clock, config, secrets } = core;
  const oauth = createOauthModule({
    db,
    clock,
    secrets,
    publicBaseUrl: config.publicBaseUrl,
    allowPrivateNetworks: config.webhookAllowPrivateNetworks,
    auth: services.auth,
    members: services.members,
    organizations: services.organizations,
    oauthTokens: services.oauthTokens,
    audit: services.audit,
  });
  return { modules: [oauth], services: { oauth: oauth.service } } satisfies Area<object>;
}
