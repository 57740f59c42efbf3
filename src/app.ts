import cookie from '@fastify/cookie';
import { buildAccess } from './composition/access.ts';
import { buildAutomation } from './composition/automation.ts';
import { buildBilling } from './composition/billing.ts';
import { buildCore } from './composition/core.ts';
import { buildDelivery } from './composition/delivery.ts';
import { buildMessaging } from './composition/messaging.ts';
import { buildMetrics } from './composition/metrics.ts';
import { buildOauth } from './composition/oauth.ts';
import { buildOutreach } from './composition/outreach.ts';
import { buildPlatform } from './composition/platform.ts';
import { buildTools } from './composition/tools.ts';
import type { Config } from './config/config.ts';
import type { Store } from './db/connect.ts';
import { registerAccessControl, type AccessRow } from './http/access.ts';
import { registerNativeJsonSerializers } from './http/native-json.ts';
import { registerStoredJsonSerializers } from './http/stored-json.ts';
import { registerOpenApi } from './http/openapi.ts';
import { registerEndOfTurnWrites } from './http/end-of-turn-writes.ts';
import { registerRequestMeter } from './http/request-meter.ts';
import { RATE_LIMIT_REDIS_OPTIONS, registerRateLimits } from './http/rate-limit.ts';
import { createHttpServer, type HttpServer } from './http/server.ts';
import { registerWriteRequests } from './http/write-requests.ts';
import type { Worker } from './jobs/worker.ts';
import type { Clock } from './lib/clock.ts';
import { NO_METRICS } from './lib/metrics.ts';
import { openMediaStorage } from './modules/media/index.ts';
import type { SandboxProvider } from './provider/sandbox/index.ts';

export const API_VERSION = '1.0.0';

export interface App {
  server: HttpServer;
  services: ReturnType<typeof buildAreas>['services'];
  accessTable: AccessRow[];
  store: Store;
  /** Runs queued work. Started by main.ts for ROLE=worker|all; tests drive it directly. */
  worker: Worker;
  /** The sandbox provider mounted at /sandbox, in sandbox mode. */
  sandbox: SandboxProvider | undefined;
  /**
   * With METRICS_TOKEN and ROLE=worker: a server of its own that answers `/metrics` and nothing else,
   * since a worker serves no API but its provider calls and deliveries happen nowhere else. main.ts
   * listens on it in place of `server`.
   */
  metricsServer: HttpServer | undefined;
}

/** This process's own address once it listens; before that (or in a worker-only process), the public one. */
function listeningUrl(server: HttpServer, config: Config): string {
  const address = server.server.address();
  if (address === null || typeof address === 'string') return config.publicBaseUrl;
  const host =
    address.family === 'IPv6' ? `[${address.address === '::' ? '::1' : address.address}]` : address.address === '0.0.0.0' ? '127.0.0.1' : address.address;
  return `http://${host}:${address.port}`;
}

/** The areas of the service, each built on those before it (src/composition/). */
function buildAreas(core: ReturnType<typeof buildCore>) {
  const platform = buildPlatform(core);
  const messaging = buildMessaging(core, platform.services);
  const billing = buildBilling(core, { ...platform.services, ...messaging.services });
  const outreach = buildOutreach(core, { ...platform.services, ...messaging.services });
  const automation = buildAutomation(core, { ...platform.services, ...messaging.services, ...outreach.services });
  const delivery = buildDelivery(core, { ...platform.services, ...messaging.services, ...billing.services });
  const access = buildAccess(core, { ...platform.services, ...messaging.services });
  const oauth = buildOauth(core, platform.services);
  const tools = buildTools(core, { ...platform.services, ...messaging.services, ...billing.services, ...outreach.services }, { apiVersion: API_VERSION });
  return {
    modules: [
      ...platform.modules,
      ...messaging.modules,
      ...billing.modules,
      ...outreach.modules,
      ...automation.modules,
      ...delivery.modules,
      ...access.modules,
      ...oauth.modules,
      ...tools.modules,
    ],
    services: {
      ...platform.services,
      ...messaging.services,
      ...billing.services,
      ...outreach.services,
      ...automation.services,
      ...delivery.services,
      ...access.services,
      ...oauth.services,
      events: core.events,
      queue: core.queue,
    },
  };
}

export async function createApp(options: { config: Config; store: Store; clock: Clock }): Promise<App> {
  const { config, store, clock } = options;
  const serverOptions = {
    publicBaseUrl: config.publicBaseUrl,
    logLevel: config.logLevel,
    trustProxy: config.trustProxy,
    isUnavailable: store.dialect.isUnavailable,
  };
  const server = createHttpServer(serverOptions);
  // Loaded only by a process that uses Redis: most never do, and the client is ~10 MiB resident.
  const redis = config.redisUrl ? new (await import('ioredis')).Redis(config.redisUrl, RATE_LIMIT_REDIS_OPTIONS) : undefined;
  if (redis) server.addHook('onClose', async () => redis.disconnect());
  const mediaStorage = await openMediaStorage(config.mediaStorage);
  server.addHook('onClose', () => mediaStorage.close());
  const metrics = await buildMetrics(config, store, clock);
  const core = buildCore({
    config,
    store,
    clock,
    log: server.log,
    localUrl: () => listeningUrl(server, config),
    redis,
    mediaStorage,
    metrics: metrics?.service ?? NO_METRICS,
  });
  const { modules, services } = buildAreas(core);
  const metricsServer = metrics && config.role === 'worker' ? createHttpServer(serverOptions) : undefined;
  for (const job of [...core.jobs, ...modules.flatMap((module) => module.jobs ?? [])]) core.worker.register(job.definition, job.handler);
  // A catalogued job nobody handles would wait forever: refuse to start instead.
  core.worker.assertComplete();
  server.addHook('onClose', async () => {
    await metricsServer?.close();
    await Promise.all([...modules.map((module) => module.close?.()), metrics?.close?.(), core.provider.close()]);
  });
  // Parsed only where read (modules/auth/session-cookie.ts); setting one needs no parsing hook.
  await server.register(cookie, { hook: false });
  const accessTable = registerAccessControl(server, services.credentials.authenticate, { v1Resource: `${config.publicBaseUrl}/v1` });
  // Before the stored JSON serializers, which leave alone a route that has a serializer of its own.
  registerNativeJsonSerializers(server, { check: config.verifyNativeJson });
  registerStoredJsonSerializers(server);
  registerRequestMeter(server, services.usage);
  await registerRateLimits(server, {
    redis,
    clock,
    keyPrefix: config.rateLimitKeyPrefix,
    unauthenticatedPerMinute: config.rateLimitUnauthenticatedPerMinute,
    credentialMultiplier: config.rateLimitCredentialMultiplier,
  });
  registerWriteRequests(server, { gate: services.idempotencyKeys, openTransaction: store.openRequestTransaction, publicBaseUrl: config.publicBaseUrl });
  // Last of the route-level hooks: only the socket write waits for the end of the turn.
  registerEndOfTurnWrites(server);
  await registerOpenApi(server, { publicBaseUrl: config.publicBaseUrl, version: API_VERSION });
  for (const module of modules) module.routes?.(server);
  metrics?.routes?.(metricsServer ?? server);
  if (core.provider.sandbox) await server.register(core.provider.sandbox.plugin, { prefix: '/sandbox' });
  await Promise.all([server.ready(), metricsServer?.ready()]);
  return { server, services, accessTable, store, worker: core.worker, sandbox: core.provider.sandbox, metricsServer };
}
