/**
 * API keys: connection keys (`csk_`) and organization keys (`cok_`), live or test. The full key is
 * shown once; only its SHA-256 hash and a recognisable hint are stored. Also resolves a presented
 * key into its caller for the credentials module.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { HttpServer } from '../../http/server.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { ConnectionsService } from '../connections/index.ts';
import { registerApiKeysRoutes } from './api-keys.routes.ts';
import { createApiKeysService } from './api-keys.service.ts';
import { createApiKeysStore } from './api-keys.store.ts';

export function createApiKeysModule(deps: { db: Db; clock: Clock; audit: AuditEventsService; connections: ConnectionsService }) {
  const service = createApiKeysService({ ...deps, store: createApiKeysStore() });
  return { service, registerRoutes: (app: HttpServer) => registerApiKeysRoutes(app, service) };
}

export type { ApiKeysService } from './api-keys.service.ts';
