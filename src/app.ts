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
import { registerQueueMaintenance } from './jobs/maintenance.ts';
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
import { createContactsModule } from './modules/contacts/index.ts';
import { createConversationsModule } from './modules/conversations/index.ts';
import { createConversationLocksModule } from './modules/conversation-locks/index.ts';
import { createConversationNotesModule } from './modules/conversation-notes/index.ts';
import { createFileMediaStorage, createMediaModule } from './modules/media/index.ts';
import { createMessagesModule } from './modules/messages/index.ts';
import { createTemplatesModule } from './modules/templates/index.ts';
import { createProviderWebhooksModule } from './modules/provider-webhooks/index.ts';
import { createRuntimeModule } from './modules/runtime/index.ts';
import { lazily } from './provider/lazy.ts';
import { createPacer, THROUGHPUT_PER_SECOND, withPacing } from './provider/pacing.ts';
import { createSandboxProvider, type SandboxProvider } from './provider/sandbox/index.ts';
import { createCloudProvider, type CloudProvider } from './provider/whatsapp/cloud-adapter.ts';
import { parseProviderWebhook } from './provider/whatsapp/webhook-parser.ts';
import { verifyProviderSignature } from './provider/whatsapp/webhook-signature.ts';
import { createHmac } from 'node:crypto';
import path from 'node:path';

export const API_VERSION = '1.0.0';

export interface App {
  server: HttpServer;
  services: ReturnType<typeof buildModules>['services'];
  accessTable: AccessRow[];
  store: Store;
  /** Runs queued work. Started by main.ts for ROLE=worker|all; tests drive it directly. */
  worker: Worker;
  /** The sandbox provider mounted at /sandbox, in sandbox mode. */
  sandbox: SandboxProvider | undefined;
}

/** This process's own address once it listens; before that (or in a worker-only process), the public one. */
function listeningUrl(server: HttpServer, config: Config): string {
  const address = server.server.address();
  if (address === null || typeof address === 'string') return config.publicBaseUrl;
  const host = address.family === 'IPv6' ? `[${address.address === '::' ? '::1' : address.address}]` : address.address === '0.0.0.0' ? '127.0.0.1' : address.address;
  return `http://${host}:${address.port}`;
}

/**
 * The provider the service talks to: the real one (`cloud`), or the sandbox mounted at /sandbox and
 * reached over loopback HTTP exactly like the real one. `localUrl` is this process's own address,
 * known once it listens.
 */
function buildProvider(config: Config, clock: Clock, masterKey: Buffer, localUrl: () => string, redis: Redis | undefined) {
  // In sandbox mode the secrets only need to be stable across processes that share the master key.
  const derived = (purpose: string) => createHmac('sha256', masterKey).update(purpose).digest('hex');
  const appSecret = config.providerAppSecret ?? derived('sandbox app secret');
  const verifyToken = config.providerVerifyToken ?? derived('sandbox verify token');
  let sandbox: SandboxProvider | undefined;
  if (config.providerMode === 'sandbox') {
    sandbox = createSandboxProvider({
      clock, appSecret, verifyToken, webhookUrl: () => `${localUrl()}/provider/webhook`, statusStepMs: 0,
      routeConfig: { access: { public: true, reason: 'the sandbox provider (PROVIDER_MODE=sandbox)', rateLimit: false } },
    });
  }
  const graphBaseUrl = () => config.providerBaseUrl ?? (sandbox ? `${localUrl()}/sandbox/graph` : 'https://graph.facebook.com');
  // Every send to a number passes its ceiling, shared by every process through Redis when there is one.
  const pacer = createPacer({ redis, keyPrefix: `${config.rateLimitKeyPrefix}:pacing` });
  const cloud = lazily<CloudProvider>(() =>
    withPacing(
      createCloudProvider({
        baseUrl: graphBaseUrl(), version: config.providerApiVersion, appId: config.providerAppId ?? 'sandbox', appSecret, timeoutMs: config.providerTimeoutMs,
      }),
      { pacer, ceilingOf: (credentials) => credentials.messagesPerSecond ?? THROUGHPUT_PER_SECOND.standard },
    ),
  );
  return {
    provider: cloud.instance,
    /** For the runtime surface, which relays raw requests beside the adapter but shares its pacing. */
    graphBaseUrl,
    pacer,
    sandbox,
    inbound: { verifySignature: (raw: Buffer, header: string | undefined) => verifyProviderSignature(raw, header, appSecret), parse: parseProviderWebhook, verifyToken },
    close: async () => {
      sandbox?.close();
      await cloud.created()?.close();
    },
  };
}

/** The composition root: every module, built from the store, the clock and the config. No logic here. */
function buildModules(store: Store, clock: Clock, config: Config, log: FastifyBaseLogger, localUrl: () => string, redis: Redis | undefined) {
  const { db } = store;
  const masterKey = ensureMasterKey(config);
  const secrets = new SecretBox(masterKey);
  const provider = buildProvider(config, clock, masterKey, localUrl, redis);
  const worker = createWorker({ db, dialect: store.dialect, clock, log, leaseMs: config.workerLeaseMs });
  const queue = createQueue({ clock, onEnqueue: () => worker.wake() });
  const audit = createAuditEventsModule({ db, clock });
  const organizations = createOrganizationsModule({ db, clock });
  const members = createMembersModule({ db, clock, isUniqueViolation: store.dialect.isUniqueViolation });
  // Emitting asks the endpoints who subscribes, and the endpoints emit pings: the lookup is bound late.
  const events = createEventEmitter({
    store: createEventsStore(), queue, clock,
    findSubscribers: (trx, organizationId, type, connectionId) => webhookEndpoints.service.findSubscribers(trx, organizationId, type, connectionId),
  });
  // Connections sync their templates, and the template endpoints reach the provider through connections: bound late.
  const templates = createTemplatesModule({ db, clock, events, audit: audit.service, provider: provider.provider, connections: () => connections.service });
  const connections = createConnectionsModule({ db, clock, audit: audit.service, events, queue, secrets, provider: provider.provider, templates: templates.service });
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
  // Expanding a conversation's contact and last message, and moving its notes in a merge, use modules built on this one: bound late.
  const conversations = createConversationsModule({
    db, clock, events, queue, members: members.service,
    relations: () => ({ contacts: (principal, ids) => contacts.service.findMany(principal, ids), lastMessages: (ids) => messages.service.lastOfConversations(ids) }),
    onFold: async (trx, from, to) => {
      await conversationNotes.service.move(trx, from, to);
      await locks.service.endWithConversation(trx, from);
    },
  });
  const conversationNotes = createConversationNotesModule({ db, clock, conversations: conversations.service });
  const locks = createConversationLocksModule({ db, clock, events, queue, conversations: conversations.service, members: members.service });
  const contacts = createContactsModule({ db, clock, events, audit: audit.service, conversations: conversations.service, connections: connections.service });
  const media = createMediaModule({
    db, clock, queue, provider: provider.provider, audit: audit.service, connections: connections.service,
    storage: createFileMediaStorage(path.join(config.dataDir, 'media')),
  });
  const messages = createMessagesModule({
    db, clock, events, queue, log, provider: provider.provider, contacts: contacts.service, conversations: conversations.service,
    connections: connections.service, templates: templates.service, media: media.service, locks: locks.service,
  });
  const providerWebhooks = createProviderWebhooksModule({
    db, clock, queue, log, inbound: provider.inbound, connections: connections.service, messages: messages.service, templates: templates.service,
  });
  const webhookEndpoints = createWebhookEndpointsModule({
    db, clock, secrets, transport: sender, events, audit: audit.service, connections: connections.service,
    notifyOwners: mail.service.notifyOwners,
  });
  for (const module of [webhookEndpoints, mail, connections, providerWebhooks, conversations, locks, media, messages]) module.registerJobs(worker);
  const runtime = createRuntimeModule({ connections: connections.service, log, providerBaseUrl: provider.graphBaseUrl, pacer: provider.pacer });
  const idempotencyKeys = createIdempotencyKeysModule({ db, clock, isUniqueViolation: store.dialect.isUniqueViolation, secrets });
  idempotencyKeys.registerJobs(worker);
  registerQueueMaintenance(worker, { db, clock, log });
  worker.assertComplete();
  return {
    routes: [health, errorReference, auth, identity, connections, apiKeys, members, audit, webhookEndpoints, providerWebhooks, runtime, contacts, messages, templates, media, conversations, conversationNotes, locks],
    sandbox: provider.sandbox,
    worker,
    closeables: [sender, provider],
    services: {
      audit: audit.service, organizations: organizations.service, members: members.service, connections: connections.service,
      apiKeys: apiKeys.service, oauthTokens: oauthTokens.service, auth: auth.service, credentials,
      idempotencyKeys: idempotencyKeys.service, webhookEndpoints: webhookEndpoints.service, mail: mail.service, events, queue,
      messages: messages.service, providerWebhooks: providerWebhooks.service,
      contacts: contacts.service, templates: templates.service, media: media.service, conversations: conversations.service,
      locks: locks.service,
    },
  };
}

export async function createApp(options: { config: Config; store: Store; clock: Clock }): Promise<App> {
  const { config, store, clock } = options;
  const server = createHttpServer({ publicBaseUrl: config.publicBaseUrl, logLevel: config.logLevel, trustProxy: config.trustProxy, isUnavailable: store.dialect.isUnavailable });
  const redis = config.redisUrl ? new Redis(config.redisUrl, RATE_LIMIT_REDIS_OPTIONS) : undefined;
  if (redis) server.addHook('onClose', async () => redis.disconnect());
  const { routes, services, worker, closeables, sandbox } = buildModules(store, clock, config, server.log, () => listeningUrl(server, config), redis);
  server.addHook('onClose', async () => {
    await Promise.all(closeables.map((closeable) => closeable.close()));
  });
  await server.register(cookie);
  const accessTable = registerAccessControl(server, services.credentials.authenticate);
  await registerRateLimits(server, { redis, clock, keyPrefix: config.rateLimitKeyPrefix, unauthenticatedPerMinute: config.rateLimitUnauthenticatedPerMinute });
  registerIdempotency(server, services.idempotencyKeys);
  await registerOpenApi(server, { publicBaseUrl: config.publicBaseUrl, version: API_VERSION });
  for (const module of routes) module.registerRoutes(server);
  if (sandbox) await server.register(sandbox.plugin, { prefix: '/sandbox' });
  await server.ready();
  return { server, services, accessTable, store, worker, sandbox };
}
