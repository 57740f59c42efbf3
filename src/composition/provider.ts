import { createHmac } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { storeFor, type Store } from '../db/connect.ts';
import type { Clock } from '../lib/clock.ts';
import type { Metrics } from '../lib/metrics.ts';
import { withCallMetrics } from '../provider/call-metrics.ts';
import { lazily } from '../provider/lazy.ts';
import { createPacer, THROUGHPUT_PER_SECOND, withPacing } from '../provider/pacing.ts';
import { createSandboxProvider, type SandboxProvider, type SandboxTables } from '../provider/sandbox/index.ts';
import { createCloudProvider, type CloudProvider } from '../provider/whatsapp/cloud-adapter.ts';
import { parseProviderWebhook } from '../provider/whatsapp/webhook-parser.ts';
import { verifyProviderSignature } from '../provider/whatsapp/webhook-signature.ts';

/**
 * The provider the service talks to: the real one (`cloud`), or the sandbox mounted at /sandbox and
 * reached over loopback HTTP exactly like the real one. `localUrl` is this process's own address,
 * known once it listens. Calls and pacing waits are reported to `metrics`.
 */
export function buildProvider(
  config: Config,
  store: Store,
  clock: Clock,
  masterKey: Buffer,
  localUrl: () => string,
  redis: Redis | undefined,
  metrics: Metrics,
) {
  // In sandbox mode the secrets only need to be stable across processes that share the master key.
  const derived = (purpose: string) => createHmac('sha256', masterKey).update(purpose).digest('hex');
  const appSecret = config.providerAppSecret ?? derived('sandbox app secret');
  const verifyToken = config.providerVerifyToken ?? derived('sandbox verify token');
  let sandbox: SandboxProvider | undefined;
  // Mounted only where it is reached: a PROVIDER_BASE_URL names a sandbox served elsewhere (another
  // process, or `npm run sandbox`), and a worker serves no HTTP.
  if (config.providerMode === 'sandbox' && config.providerBaseUrl === undefined && config.role !== 'worker') {
    sandbox = createSandboxProvider({
      // Its world lives in the store's `sandbox_*` tables, shared by every process and kept across restarts.
      store: storeFor<SandboxTables>(store),
      clock,
      appSecret,
      verifyToken,
      webhookUrl: () => `${localUrl()}/provider/webhook`,
      statusStepMs: 0,
      docsBaseUrl: config.publicBaseUrl,
      routeConfig: { access: { public: true, reason: 'the sandbox provider (PROVIDER_MODE=sandbox)', rateLimit: false } },
    });
  }
  const graphBaseUrl = () => config.providerBaseUrl ?? (sandbox ? `${localUrl()}/sandbox/graph` : 'https://graph.facebook.com');
  // Every send to a number passes its ceiling, shared by every process through Redis when there is one.
  const pacer = createPacer({ redis, keyPrefix: `${config.rateLimitKeyPrefix}:pacing`, metrics });
  // Timed inside the pacer: a call's latency is the provider's, not its wait for a slot.
  const cloud = lazily<CloudProvider>(() =>
    withPacing(
      withCallMetrics(
        createCloudProvider({
          baseUrl: graphBaseUrl(),
          version: config.providerApiVersion,
          appId: config.providerAppId ?? 'sandbox',
          appSecret,
          timeoutMs: config.providerTimeoutMs,
        }),
        metrics,
      ),
      { pacer, ceilingOf: (credentials) => credentials.messagesPerSecond ?? THROUGHPUT_PER_SECOND.standard },
    ),
  );
  return {
    provider: cloud.instance,
    /** For the runtime surface, which relays raw requests beside the adapter but shares its pacing. */
    graphBaseUrl,
    pacer,
    sandbox,
    inbound: {
      verifySignature: (raw: Buffer, header: string | undefined) => verifyProviderSignature(raw, header, appSecret),
      parse: parseProviderWebhook,
      verifyToken,
    },
    close: async () => {
      sandbox?.close();
      await cloud.created()?.close();
    },
  };
}

export type ProviderWiring = ReturnType<typeof buildProvider>;
