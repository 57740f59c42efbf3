/**
 * Runtime: the pass-through surface `/runtime/{provider_version}/...` (docs/runtime.md). A connection
 * key holding `runtime:proxy` calls the provider's own API for its one number and business account:
 * the request is relayed with the connection's token and the provider's raw answer comes back. Owns
 * the rules of that surface (what a path may address, what is paced, what a fault becomes); the
 * provider-knowing half, URLs, headers and error codes, is provider/whatsapp/relay.ts. Owns no table.
 */
import type { Metrics } from '../../lib/metrics.ts';
import { withRelayMetrics } from '../../provider/call-metrics.ts';
import type { Pacer } from '../../provider/pacing.ts';
import { createGraphRelay } from '../../provider/whatsapp/relay.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { Module } from '../module.ts';
import { registerRuntimeRoutes } from './runtime.routes.ts';
import { createRuntimeService, type RuntimeLog, type RuntimeService } from './runtime.service.ts';

export interface RuntimeModuleDeps {
  connections: Pick<ConnectionsService, 'providerAccess' | 'reportProviderError'>;
  /** The provider's Graph root without a version (the sandbox's is known only once the server listens). */
  providerBaseUrl: () => string;
  /** Set when the app requires `appsecret_proof`, as the cloud adapter is told. */
  appSecretProof?: { appSecret: string };
  /** The pacer the /v1 sends use, so that both surfaces share each number's ceiling. */
  pacer: Pick<Pacer, 'acquire'>;
  log: RuntimeLog;
  /** Per phase of a relayed call (default 10 s). */
  timeoutMs?: number;
  /** Told of each relayed call, as the provider call `runtime`. */
  metrics: Pick<Metrics, 'providerCall'>;
}

export function createRuntimeModule(deps: RuntimeModuleDeps): Module<RuntimeService> {
  const relay = withRelayMetrics(
    createGraphRelay({ baseUrl: deps.providerBaseUrl, appSecretProof: deps.appSecretProof, timeoutMs: deps.timeoutMs }),
    deps.metrics,
  );
  const service = createRuntimeService({ connections: deps.connections, relay, pacer: deps.pacer, log: deps.log });
  return { name: 'runtime', service, routes: (server) => registerRuntimeRoutes(server, service), close: () => relay.close() };
}

export type { RuntimeService } from './runtime.service.ts';
