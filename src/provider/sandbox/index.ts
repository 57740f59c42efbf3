/**
 * The sandbox provider: an in-memory stand-in for the provider's Cloud API that the service talks to
 * over real HTTP, exactly as it would to the provider. It owns the Graph endpoints (`/graph/{version}`:
 * onboarding, numbers, messages, media, templates, subscriptions), the rate limits and usage headers,
 * the signed webhooks it sends back (messages, statuses, template, quality, account and coexistence
 * notifications), and a control API (`/control`) through which tests and people make the simulated
 * world act. It knows nothing of the service: it is mounted by the composition root or run alone by
 * `main.ts`, and answers in the provider's shapes inside whatever host it is mounted in.
 */
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../lib/clock.ts';
import { installControlConventions } from './control-http.ts';
import { controlRoutes } from './control.routes.ts';
import { createSandboxEvents } from './events.ts';
import { graphRoutes } from './graph.routes.ts';
import { createLimits } from './limits.ts';
import { createMediaStore } from './media.ts';
import { createSandboxState, type TemplateReview } from './state.ts';
import { createTemplateStore } from './templates.ts';
import { createWebhookSender, verifyCallback, type WebhookDelivery } from './webhooks.ts';

export interface SandboxProviderOptions {
  clock: Clock;
  /** Signs webhooks and must be presented as `client_secret` when exchanging a code. */
  appSecret: string;
  /**
   * Where webhooks go; without it they are only recorded (see `GET /control/webhooks`). A function is
   * asked at each delivery, for hosts that learn their own address only once they listen.
   */
  webhookUrl?: string | (() => string);
  /** Used by `verifyWebhook()` for the provider's GET subscription handshake. */
  verifyToken?: string;
  /** Walk every accepted message through sent → delivered → read (default true). */
  autoStatus?: boolean;
  /** Wall-clock delay before each step of the walk (and of template reviews); 0 makes tests fast. */
  statusStepMs?: number;
  /** What happens to new templates: stay PENDING (`manual`, default), or get approved/rejected. */
  templateReview?: TemplateReview;
  /** Cap on media bytes kept in memory (default 256 MB); the oldest files are dropped beyond it. */
  mediaMaxTotalBytes?: number;
  /**
   * Merged into the `config` of every sandbox route, for hosts that require declarations on their
   * routes (e.g. `{ access: { public: true, reason: '...', rateLimit: false } }`).
   */
  routeConfig?: Record<string, unknown>;
}

export function createSandboxProvider(options: SandboxProviderOptions) {
  const { clock } = options;
  const state = createSandboxState(clock, { autoStatus: options.autoStatus ?? true, templateReview: options.templateReview ?? 'manual' });
  const media = createMediaStore({
    clock,
    newId: state.newNodeId,
    ...(options.mediaMaxTotalBytes === undefined ? {} : { maxTotalBytes: options.mediaMaxTotalBytes }),
  });
  const templates = createTemplateStore({ clock, newId: state.newNodeId });
  const limits = createLimits({
    clock,
    behaviour: state.behaviour,
    hasRegisteredNumber: (wabaId) => state.numbersOfWaba(wabaId).some((number) => number.pinEnabled),
  });
  const sender = createWebhookSender({ appSecret: options.appSecret, clock });
  const webhookUrl = (): string | undefined => (typeof options.webhookUrl === 'function' ? options.webhookUrl() : options.webhookUrl);
  const events = createSandboxEvents({ state, templates, sender, clock, webhookUrl, stepMs: options.statusStepMs ?? 0 });
  const routeConfig = options.routeConfig ?? {};

  // The sandbox's scope gets its own parsers and error answers, so that inside a host application it
  // still answers as the provider does (Graph) or in its own control envelope, never in the host's.
  async function plugin(app: FastifyInstance): Promise<void> {
    installControlConventions(app, 'The Graph API is under /graph/{version}/, the control API under /control/.');
    await app.register(graphRoutes({ clock, state, media, templates, limits, events, appSecret: options.appSecret, routeConfig }), { prefix: '/graph' });
    await app.register(controlRoutes({ clock, state, media, templates, events, deliveries: sender.deliveries, routeConfig }), { prefix: '/control' });
  }

  return {
    /** Register with `app.register(sandbox.plugin, { prefix: '/sandbox' })`, or at the root when alone. */
    plugin,
    state,
    media,
    templates,
    deliveries: sender.deliveries as readonly WebhookDelivery[],
    /** Resolves when every scheduled status step and queued webhook has been attempted. */
    idle: sender.idle,
    /** Cancels scheduled status steps; webhooks already on the wire finish on their own. */
    close: sender.close,
    /** The provider's subscription handshake (§4) against `webhookUrl`; resolves to whether it succeeded. */
    async verifyWebhook(): Promise<boolean> {
      const url = webhookUrl();
      if (url === undefined || options.verifyToken === undefined) return false;
      return verifyCallback(url, options.verifyToken);
    },
  };
}

export type SandboxProvider = ReturnType<typeof createSandboxProvider>;
export { COEXISTENCE_CODE_PREFIX } from './state.ts';
export { escapeNonAscii, signatureHeader } from './webhooks.ts';
