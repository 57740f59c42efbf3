/**
 * API keys: connection keys (`csk_`) and organization keys (`cok_`), live or test. The full key is
 * shown once; only its SHA-256 hash and a recognisable hint are stored. Also resolves a presented
 * key into its caller for the credentials module.
 */
import type { Module } from '../module.ts';
import { registerApiKeysRoutes } from './api-keys.routes.ts';
import { createApiKeysService, type ApiKeysService, type ApiKeysServiceDeps } from './api-keys.service.ts';
import { createApiKeysStore } from './api-keys.store.ts';

export function createApiKeysModule(deps: Omit<ApiKeysServiceDeps, 'store'>): Module<ApiKeysService> {
  const service = createApiKeysService({ ...deps, store: createApiKeysStore() });
  return { name: 'api-keys', service, routes: (server) => registerApiKeysRoutes(server, service) };
}

export type { ApiKeysService } from './api-keys.service.ts';
