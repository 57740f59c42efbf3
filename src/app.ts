import cookie from '@fastify/cookie';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import { ensureMasterKey, type Config } from './config/config.ts';
import { isStoreReady, type Store } from './db/connect.ts';
import { registerAccessControl, type AccessRow } from './http/access.ts';
import { registerIdempotency } from './http/idempotency.ts';
import { registerOpenApi } from './http/openapi.ts';
import { RATE_LIMIT_REDIS_OPTIONS, registerRateLimits } from './http/rate-limit.ts';
import { createHttpServer, type HttpServer } from './http/server.ts';
import { createEventEmitter } from './events/emit.ts';
import { createEventsStore } from './events/events.store.ts';
import { createQueue } from './jobs/queue.ts';
import { createWorker, type Worker } from './jobs/worker.ts';
import type { Clock } from './lib/clock.ts';
import { SecretBox } from './lib/crypto.ts';
import { createApiKeysModule } from './modules/api-keys/index.ts';
import { createAuditEventsModule } from './modules/audit-events/index.ts';
import { createAuthModule, DASHBOARD_TOKEN_PREFIX } from './modules/auth/index.ts';
import { createConnectionsModule } from './modules/connections/index.ts';
import { createCredentialsService } from './modules/credentials/index.ts';
import { createErrorReferenceModule } from './modules/error-reference/index.ts';
import { createHealthModule } from './modules/health/index.ts';
import { createIdempotencyKeysModule } from './modules/idempotency-keys/index.ts';
import { createIdentityModule } from './modules/identity/index.ts';
import { createMailModule, createMailTransport } from './modules/mail/index.ts';
import { createMembersModule } from './modules/members/index.ts';
import { createOauthTokensModule, OAUTH_TOKEN_PREFIX } from './modules/oauth-tokens/index.ts';
import { createOrganizationsModule } from './modules/organizations/index.ts';
import { createWebhookEndpointsModule } from './modules/webhook-endpoints/index.ts';
import { createWebhookSender } from './modules/webhook-endpoints/webhook-sender.ts';

export const API_VERSION = '1.0.0';

export interface App {
  server: HttpServer;
  services: ReturnType<typeof buildModules>['services'];
  accessTable: AccessRow[];
  store: Store;
  /** Runs queued work. Started by main.ts for ROLE=worker|all; tests drive it directly. */
  worker: Worker;
}

/** The composition root: every module, built from the store, the clock and the config. No logic here. */
function buildModules(store: Store, clock: Clock, config: Config, log: FastifyBaseLogger) {
  const { db } = store;
  const secrets = new SecretBox(ensureMasterKey(config));
  const worker = createWorker({ db, dialect: store.dialect, clock, log, leaseMs: config.workerLeaseMs });
  const queue = createQueue({ clock, onEnqueue: () => worker.wake() });
  const audit = createAuditEventsModule({ db, clock });
  const organizations = createOrganizationsModule({ db, clock });
  const members = createMembersModule({ db, clock, isUniqueViolation: store.dialect.isUniqueViolation });
  const connections = createConnectionsModule({ db, clock, audit: audit.service });
  const apiKeys = createApiKeysModule({ db, clock, audit: audit.service, connections: connections.service });
  const oauthTokens = createOauthTokensModule({ db, clock });
  const auth = createAuthModule({
    db, clock, organizations: organizations.service, members: members.service, audit: audit.service,
    secureCookies: config.publicBaseUrl.startsWith('https:'),
  });
  const credentials = createCredentialsService({
    apiKey: apiKeys.service.authenticate,
    dashboardToken: auth.service.authenticate,
    oauthToken: oauthTokens.service.authenticate,
    prefixes: { dashboardToken: DASHBOARD_TOKEN_PREFIX, oauthToken: OAUTH_TOKEN_PREFIX },
  });
  const identity = createIdentityModule({ organizations: organizations.service, members: members.service });
  const health = createHealthModule({ isReady: () => isStoreReady(store) });
  const errorReference = createErrorReferenceModule();
  const mail = createMailModule({
    db, clock, queue, members: members.service,
    transport: createMailTransport({ smtpUrl: config.smtpUrl, log: (entry) => log.info(entry, 'mail recorded (no SMTP_URL set)') }),
    from: `Messaging Service <no-reply@${new URL(config.publicBaseUrl).hostname}>`,
  });
  const sender = createWebhookSender({ allowPrivateNetworks: config.webhookAllowPrivateNetworks });
  // Emitting asks the endpoints who subscribes, and the endpoints emit pings: the lookup is bound late.
  const events = createEventEmitter({
    store: createEventsStore(), queue, clock,
    findSubscribers: (trx, organizationId, type, connectionId) => webhookEndpoints.service.findSubscribers(trx, organizationId, type, connectionId),
  });
  const webhookEndpoints = createWebhookEndpointsModule({
    db, clock, secrets, transport: sender, events, audit: audit.service, connections: connections.service,
    notifyOwners: mail.service.notifyOwners,
  });
  for (const module of [webhookEndpoints, mail]) module.registerJobs(worker);
  const idempotencyKeys = createIdempotencyKeysModule({ db, clock, isUniqueViolation: store.dialect.isUniqueViolation, secrets });
  return {
    routes: [health, errorReference, auth, identity, connections, apiKeys, members, audit, webhookEndpoints],
    worker,
    closeables: [sender],
    services: {
      audit: audit.service, organizations: organizations.service, members: members.service, connections: connections.service,
      apiKeys: apiKeys.service, oauthTokens: oauthTokens.service, auth: auth.service, credentials,
      idempotencyKeys: idempotencyKeys.service, webhookEndpoints: webhookEndpoints.service, mail: mail.service, events, queue,
    },
  };
}

export async function createApp(options: { config: Config; store: Store; clock: Clock }): Promise<App> {
  const { config, store, clock } = options;
  const server = createHttpServer({ publicBaseUrl: config.publicBaseUrl, logLevel: config.logLevel, trustProxy: config.trustProxy, isUnavailable: store.dialect.isUnavailable });
  const { routes, services, worker, closeables } = buildModules(store, clock, config, server.log);
  server.addHook('onClose', async () => {
    await Promise.all(closeables.map((closeable) => closeable.close()));
  });
  await server.register(cookie);
  const accessTable = registerAccessControl(server, services.credentials.authenticate);
  const redis = config.redisUrl ? new Redis(config.redisUrl, RATE_LIMIT_REDIS_OPTIONS) : undefined;
  if (redis) server.addHook('onClose', async () => redis.disconnect());
  await registerRateLimits(server, { redis, clock, keyPrefix: config.rateLimitKeyPrefix, unauthenticatedPerMinute: config.rateLimitUnauthenticatedPerMinute });
  registerIdempotency(server, services.idempotencyKeys);
  await registerOpenApi(server, { publicBaseUrl: config.publicBaseUrl, version: API_VERSION });
  for (const module of routes) module.registerRoutes(server);
  await server.ready();
  return { server, services, accessTable, store, worker };
}
