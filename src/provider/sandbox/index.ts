/**
 * The sandbox provider: a stand-in for the provider's Cloud API that the service talks to
 * over real HTTP, exactly as it would to the provider. It owns the Graph endpoints (`/graph/{version}`:
 * onboarding, numbers, messages, media, templates, subscriptions), the rate limits and usage headers,
 * the signed webhooks it sends back (messages, statuses, template, quality, account and coexistence
 * notifications), and a control API (`/control`) through which tests and people make the simulated
 * world act. It knows nothing of the service: it is mounted by the composition root or run alone by
 * `main.ts`, and answers in the provider's shapes inside whatever host it is mounted in.
 */
import { createHmac } from 'node:crypto';
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
import type { SandboxStore } from './store/index.ts';
import { createWebhookSender, verifyCallback } from './webhooks.ts';

export interface SandboxProviderOptions {
  /** Where the simulated world is kept (the host's store): shared by every process serving it. */
  store: SandboxStore;
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
  /** Cap on the media bytes kept (default 256 MB); the oldest files are dropped beyond it. */
  mediaMaxTotalBytes?: number;
  /**
   * Where the error reference (`/docs/errors/{code}`) is served, for the `doc_url` of the control
   * API's errors: the host's public base URL (default `http://localhost:3000`, the service's own).
   */
  docsBaseUrl?: string;
  /**
   * Merged into the `config` of every sandbox route, for hosts that require declarations on their
   * routes (e.g. `{ access: { public: true, reason: '...', rateLimit: false } }`).
   */
  routeConfig?: Record<string, unknown>;
}

export function createSandboxProvider(options: SandboxProviderOptions) {
  const { clock, store } = options;
  const state = createSandboxState(store, clock, { autoStatus: options.autoStatus ?? true, templateReview: options.templateReview ?? 'manual' });
  const media = createMediaStore({
    store,
    clock,
    newId: state.newNodeId,
    // Derived from the app secret, which every process serving this sandbox shares: a download URL
    // one process signs, another verifies.
    urlKey: createHmac('sha256', options.appSecret).update('sandbox media download urls').digest(),
    ...(options.mediaMaxTotalBytes === undefined ? {} : { maxTotalBytes: options.mediaMaxTotalBytes }),
  });
  const templates = createTemplateStore({ store, clock, newId: state.newNodeId });
  const limits = createLimits({ store, clock, state });
  const sender = createWebhookSender({ store, appSecret: options.appSecret, clock });
  const webhookUrl = (): string | undefined => (typeof options.webhookUrl === 'function' ? options.webhookUrl() : options.webhookUrl);
  const events = createSandboxEvents({ state, templates, sender, clock, webhookUrl, stepMs: options.statusStepMs ?? 0 });
  const routeConfig = options.routeConfig ?? {};
  const docsBaseUrl = options.docsBaseUrl ?? 'http://localhost:3000';

  // The sandbox's scope gets its own parsers and error answers, so that inside a host application it
  // still answers as the provider does (Graph) or in its own control envelope, never in the host's.
  async function plugin(app: FastifyInstance): Promise<void> {
    await state.ready();
    installControlConventions(app, 'The Graph API is under /graph/{version}/, the control API under /control/.', docsBaseUrl);
    await app.register(graphRoutes({ clock, state, media, templates, limits, events, appSecret: options.appSecret, routeConfig }), { prefix: '/graph' });
    await app.register(controlRoutes({ clock, state, media, templates, events, deliveries: sender.deliveries, routeConfig, docsBaseUrl }), {
      prefix: '/control',
    });
  }

  return {
    /** Register with `app.register(sandbox.plugin, { prefix: '/sandbox' })`, or at the root when alone. */
    plugin,
    state,
    media,
    templates,
    /** The latest webhooks sent by any process serving this sandbox, oldest first. */
    deliveries: sender.deliveries,
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
export type { SandboxStore, SandboxTables } from './store/index.ts';
export { escapeNonAscii, signatureHeader } from './webhooks.ts';
