/**
 * Provider calls reported to the metrics port: each call of the provider port (by its method's
 * name, a fixed set) and each runtime relay (`runtime`), with how it ended and how long it took.
 */
import type { Metrics, ProviderCallOutcome } from '../lib/metrics.ts';
import { isProviderError, type Provider } from './provider.ts';
import type { GraphRelay } from './whatsapp/relay.ts';

/** Every method of the port, so that one it gains later fails to compile here until it is listed. */
const OPERATIONS = {
  sendMessage: true,
  markRead: true,
  sendTyping: true,
  getPhoneNumber: true,
  exchangeCode: true,
  subscribeApp: true,
  unsubscribeApp: true,
  registerNumber: true,
  requestHistorySync: true,
  uploadMedia: true,
  getMedia: true,
  downloadMedia: true,
  deleteMedia: true,
  listTemplates: true,
  createTemplate: true,
  deleteTemplate: true,
} as const satisfies Record<keyof Provider, true>;

export function providerCallOutcome(error: unknown): ProviderCallOutcome {
  return isProviderError(error) ? error.category : 'error';
}

type Call = (...args: unknown[]) => Promise<unknown>;

/**
 * The provider with every port method timed: from the call to its answer (for `downloadMedia`, to
 * the answer's headers; the bytes stream afterwards). Wrapped inside the pacer, so a pacing wait is
 * not provider latency, and each throttled try is a call of its own. Other members (`close`) are the
 * provider's own, bound to it.
 */
export function withCallMetrics<P extends Provider>(provider: P, metrics: Pick<Metrics, 'providerCall'>): P {
  const timed = new Map<PropertyKey, Call>(
    (Object.keys(OPERATIONS) as (keyof Provider)[]).map((operation) => {
      const original = provider[operation] as Call;
      const call: Call = async (...args) => {
        const started = performance.now();
        try {
          const result = await original.apply(provider, args);
          metrics.providerCall(operation, 'ok', (performance.now() - started) / 1000);
          return result;
        } catch (error) {
          metrics.providerCall(operation, providerCallOutcome(error), (performance.now() - started) / 1000);
          throw error;
        }
      };
      return [operation, call];
    }),
  );
  return new Proxy(provider, {
    get(target, property) {
      const call = timed.get(property);
      if (call) return call;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The runtime relay with each relayed call reported as the provider call `runtime`: `ok` below HTTP
 * 400, else the category of the provider's error envelope, or `error` for an answer without one.
 */
export function withRelayMetrics(relay: GraphRelay, metrics: Pick<Metrics, 'providerCall'>): GraphRelay {
  return {
    ...relay,
    async relay(request) {
      const started = performance.now();
      try {
        const answer = await relay.relay(request);
        const outcome = answer.status < 400 ? 'ok' : (answer.failure?.category ?? 'error');
        metrics.providerCall('runtime', outcome, (performance.now() - started) / 1000);
        return answer;
      } catch (error) {
        metrics.providerCall('runtime', providerCallOutcome(error), (performance.now() - started) / 1000);
        throw error;
      }
    },
  };
}
