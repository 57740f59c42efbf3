/**
 * The sandbox provider: an in-memory stand-in for the provider's Cloud API that the service talks to
 * over real HTTP, exactly as it would to the provider. It owns the Graph endpoints (`/graph/{version}`),
 * the signed webhooks it sends back (inbound messages and the sent → delivered → read walk), and a
 * control API (`/control`) through which tests and people make the simulated world act. It knows
 * nothing of the service: it is mounted by the composition root or run alone by `main.ts`.
 */
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../lib/clock.ts';
import { controlRoutes } from './control.routes.ts';
import { graphRoutes } from './graph.routes.ts';
import { createSandboxState, type SandboxMessage, type SandboxNumber } from './state.ts';
import { createWebhookSender, messagesWebhook, statusObject, type ProviderErrorObject, type StatusName, type WebhookDelivery } from './webhooks.ts';

export interface SandboxProviderOptions {
  clock: Clock;
  /** Signs webhooks and must be presented as `client_secret` when exchanging a code. */
  appSecret: string;
  /** Where webhooks go; without it they are only recorded (see `GET /control/webhooks`). */
  webhookUrl?: string;
  /** Used by `verifyWebhook()` for the provider's GET subscription handshake. */
  verifyToken?: string;
  /** Walk every accepted message through sent → delivered → read (default true). */
  autoStatus?: boolean;
  /** Wall-clock delay before each step of the walk; 0 makes tests fast, a second feels real. */
  statusStepMs?: number;
}

export function createSandboxProvider(options: SandboxProviderOptions) {
  const state = createSandboxState(options.clock, options.autoStatus ?? true);
  const sender = createWebhookSender({ url: options.webhookUrl, appSecret: options.appSecret, clock: options.clock });
  const stepMs = options.statusStepMs ?? 0;

  function numberOf(message: SandboxMessage): SandboxNumber {
    const number = state.numbers.get(message.phoneNumberId);
    if (number === undefined) throw new Error(`sandbox message ${message.id} belongs to no number`);
    return number;
  }

  function deliver(number: SandboxNumber, value: Record<string, unknown>): Promise<WebhookDelivery> {
    return sender.send(messagesWebhook(number, value));
  }

  function emitStatus(message: SandboxMessage, status: StatusName, error?: ProviderErrorObject): Promise<WebhookDelivery> {
    return deliver(numberOf(message), { statuses: [statusObject(message, status, options.clock.now(), error)] });
  }

  // Each step is queued only after the previous one was attempted, and the first only after a
  // timer tick, so the send's HTTP response always leaves before its first status webhook.
  function walk(message: SandboxMessage): void {
    const steps: StatusName[] = ['sent', 'delivered', 'read'];
    const next = (): void => {
      const status = steps.shift();
      if (status === undefined) return;
      void emitStatus(message, status).then(() => sender.later(stepMs, next));
    };
    sender.later(stepMs, next);
  }

  async function plugin(app: FastifyInstance): Promise<void> {
    await app.register(graphRoutes({ state, appSecret: options.appSecret, walk }), { prefix: '/graph' });
    await app.register(controlRoutes({ state, deliver, emitStatus, deliveries: sender.deliveries }), { prefix: '/control' });
  }

  return {
    /** Register with `app.register(sandbox.plugin, { prefix: '/sandbox' })`, or at the root when alone. */
    plugin,
    state,
    deliveries: sender.deliveries as readonly WebhookDelivery[],
    /** Resolves when every scheduled status step and queued webhook has been attempted. */
    idle: sender.idle,
    /** Cancels scheduled status steps; webhooks already on the wire finish on their own. */
    close: sender.close,
    /**
     * The provider's subscription handshake (§4): GET the callback with `hub.*` parameters and expect
     * the challenge echoed back. Resolves to whether the receiver answered correctly.
     */
    async verifyWebhook(): Promise<boolean> {
      if (options.webhookUrl === undefined || options.verifyToken === undefined) return false;
      const challenge = String(Math.floor(Math.random() * 1e9));
      const url = new URL(options.webhookUrl);
      url.searchParams.set('hub.mode', 'subscribe');
      url.searchParams.set('hub.verify_token', options.verifyToken);
      url.searchParams.set('hub.challenge', challenge);
      const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
      return response.status === 200 && (await response.text()) === challenge;
    },
  };
}

export type SandboxProvider = ReturnType<typeof createSandboxProvider>;
export { escapeNonAscii, signatureHeader } from './webhooks.ts';
