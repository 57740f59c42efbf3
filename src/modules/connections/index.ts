/**
 * Connections: one business phone number on the provider, owned by one organization, live or test.
 * Owns connecting a number (the code exchange, the sealed business token, the app subscription),
 * its state as the provider reports it (quality, messaging limit, throughput, re-authorisation),
 * coexistence onboarding, and the rule of which credential may address which connection.
 */
import type { Worker } from '../../jobs/worker.ts';
import type { HttpServer } from '../../http/server.ts';
import { registerConnectionsJobs } from './connections.job.ts';
import { registerConnectionsRoutes } from './connections.routes.ts';
import { createConnectionsService, type ConnectionsServiceDeps } from './connections.service.ts';
import { createConnectionsStore } from './connections.store.ts';

export function createConnectionsModule(deps: Omit<ConnectionsServiceDeps, 'store'>) {
  const service = createConnectionsService({ ...deps, store: createConnectionsStore() });
  return {
    service,
    registerRoutes: (app: HttpServer) => registerConnectionsRoutes(app, service),
    registerJobs: (worker: Worker) => registerConnectionsJobs(worker, service),
  };
}

export type { ConnectionsService, ProviderAccess, ServingConnection } from './connections.service.ts';
export { assertModeAllows } from './connections.service.ts';
