/**
 * Connections: one business phone number on the provider, owned by one organization, live or test.
 * Owns the rule of which credential may address which connection (tenant, connection key, mode).
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { HttpServer } from '../../http/server.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import { registerConnectionsRoutes } from './connections.routes.ts';
import { createConnectionsService } from './connections.service.ts';
import { createConnectionsStore } from './connections.store.ts';

export function createConnectionsModule(deps: { db: Db; clock: Clock; audit: AuditEventsService }) {
  const service = createConnectionsService({ ...deps, store: createConnectionsStore() });
  return { service, registerRoutes: (app: HttpServer) => registerConnectionsRoutes(app, service) };
}

export type { ConnectionsService } from './connections.service.ts';
export { assertModeAllows } from './connections.service.ts';
