/**
 * Connectors: the static catalogue of systems an automation can call (`GET /v1/connectors`), and an
 * organization's connector accounts (`/v1/connector-accounts`): connected only after the
 * connector's test request answers 2xx, their secrets sealed with the account's id as additional
 * data and never returned, bound to a mode like keys, wiped on disconnect. `http_request` steps call
 * through an account with `call`, which adds the credentials to the rendered request and sends it
 * through the guarded client (lib/guarded-http.ts): allowed hosts only, public addresses only,
 * no redirects, a capped answer.
 */
import { createGuardedHttp } from '../../lib/guarded-http.ts';
import type { Module } from '../module.ts';
import { registerConnectorsRoutes } from './connectors.routes.ts';
import { createConnectorsService, MAX_CONNECTOR_TIMEOUT_MS, type ConnectorsService, type ConnectorsServiceDeps } from './connectors.service.ts';
import { createConnectorsStore } from './connectors.store.ts';

export function createConnectorsModule(deps: Omit<ConnectorsServiceDeps, 'store' | 'http'> & { allowPrivateNetworks: boolean }): Module<ConnectorsService> {
  const http = createGuardedHttp({ allowPrivateNetworks: deps.allowPrivateNetworks, timeoutMs: MAX_CONNECTOR_TIMEOUT_MS });
  const service = createConnectorsService({ ...deps, http, store: createConnectorsStore() });
  return { name: 'connectors', service, routes: (server) => registerConnectorsRoutes(server, service), close: () => http.close() };
}

export type { ConnectorsService, ConnectorResult, AccountUser } from './connectors.service.ts';
export type { Connector, ConnectorAccount } from './connectors.schemas.ts';
