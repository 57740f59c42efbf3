import { createApiKeysModule } from '../modules/api-keys/index.ts';
import { createCredentialsModule } from '../modules/credentials/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { PlatformServices } from './platform.ts';

/** Who may call: API keys (connection keys name a connection, hence after messaging) and resolving any bearer credential. */
export function buildAccess(core: Core, services: Pick<PlatformServices, 'audit' | 'auth' | 'oauthTokens'> & Pick<MessagingServices, 'connections'>) {
  const { db, clock } = core;
  const apiKeys = createApiKeysModule({ db, clock, audit: services.audit, connections: services.connections });
  const credentials = createCredentialsModule({ apiKeys: apiKeys.service, auth: services.auth, oauthTokens: services.oauthTokens });
  return { modules: [apiKeys, credentials], services: { apiKeys: apiKeys.service, credentials: credentials.service } } satisfies Area<object>;
}
