/**
 * Connections: one business phone number on the provider, owned by one organization, live or test.
 * Owns connecting a number (the code exchange, the sealed business token, the app subscription),
 * its state as the provider reports it (quality, messaging limit, throughput, re-authorisation),
 * coexistence onboarding, and the rule of which credential may address which connection.
 */
import type { HttpServer } from '../../http/server.ts';
import type { Module } from '../module.ts';
import type { TemplatesService } from '../templates/index.ts';
import { connectionsJobs } from './connections.job.ts';
import { registerConnectionsRoutes } from './connections.routes.ts';
import { createConnectionsService, type ConnectionsService, type ConnectionsServiceDeps } from './connections.service.ts';
import { createConnectionsStore } from './connections.store.ts';

/**
 * Templates are built on connections (they reach the provider through a connection's access), yet
 * the sync endpoint reads them too: the endpoints join once the templates module exists.
 */
export function createConnectionsModule(deps: Omit<ConnectionsServiceDeps, 'store'>) {
  const service = createConnectionsService({ ...deps, store: createConnectionsStore() });
  const module: Module<ConnectionsService> = { name: 'connections', service, jobs: connectionsJobs(service) };
  return {
    ...module,
    withEndpoints: (templates: Pick<TemplatesService, 'syncConnection'>): Module<ConnectionsService> => ({
      ...module,
      routes: (server: HttpServer) => registerConnectionsRoutes(server, service, templates),
    }),
  };
}

export type { ConnectionsService, ProviderAccess, ServingConnection } from './connections.service.ts';
export { assertModeAllows } from './connections.service.ts';
