/**
 * A fake Stripe on loopback, for the billing tests: node:http with state (customers, checkout and
 * portal sessions, subscriptions, invoices, Billing Meter events), speaking Stripe's wire format
 * (form-encoded requests with bracketed keys, JSON answers, Stripe's error envelope), reached by
 * the official SDK through its host, port and protocol options (STRIPE_API_URL). Its pay page
 * completes a checkout the way Stripe does, and it sends webhooks signed with Stripe's scheme
 * (`Stripe-Signature: t=<unix>,v1=<HMAC-SHA256 of "<t>.<body>">`) back to the service.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../src/lib/clock.ts';
import { STRIPE_API_VERSION } from '../src/modules/billing/index.ts';
import type { Scope } from './harness.ts';

type Json = Record<string, any>;

export interface StripeEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  type: string;
  livemode: false;
  pending_webhooks: number;
  request: { id: null; idempotency_key: null };
  data: { object: Json };
}

export interface MeterEvent {
  identifier: string;
  event_name: string;
  customer: string;
  value: number;
  timestamp: number;
}

export interface FakeStripe {
  url: string;
  secretKey: string;
  webhookSecret: string;
  prices: { pro: string; scale: string; metered: string };
  /** The service's STRIPE_* settings pointing at this fake. */
  env: Record<string, string>;
  customers: Map<string, Json>;
  checkoutSessions: Map<string, Json>;
  subscriptions: Map<string, Json>;
  invoices: Map<string, Json>;
  /** Accepted meter events, each identifier once (duplicates refused, as Stripe does). */
  meterEvents: MeterEvent[];
  /** Every `Stripe-Version` the SDK sent. */
  apiVersions: Set<string>;
  /** Where webhooks go: the service's base URL. */
  sendWebhooksTo(serviceUrl: string): void;
  /**
   * What the pay page's button does: completes the checkout session (a subscription on its prices,
   * its first invoice paid) and, unless `deliver` is false, delivers `customer.subscription.created`,
   * `checkout.session.completed` and `invoice.paid` in that order. Answers the events.
   */
  pay(sessionId: string, options?: { deliver?: boolean }): Promise<{ subscription: Json; events: StripeEvent[] }>;
  /** The subscription's next invoice fails: it goes `past_due`; delivers `invoice.payment_failed` then `customer.subscription.updated`. */
  failPayment(subscriptionId: string, options?: { deliver?: boolean }): Promise<StripeEvent[]>;
  /** Cancels at once: `canceled`, and `customer.subscription.deleted`. */
  cancel(subscriptionId: string, options?: { deliver?: boolean }): Promise<StripeEvent[]>;
  /** Signs and POSTs an event to the service; `timestamp` (unix seconds) and `secret` override the signature's. */
  deliver(event: StripeEvent, options?: { timestamp?: number; secret?: string; signature?: string }): Promise<{ status: number; body: any }>;
  /** The next `count` meter events are accepted and recorded, then their connection is cut before any answer. */
  cutAfterAccepting(count: number): void;
  /** The sum of the accepted meter events' values for a customer. */
  meteredTotal(customerId: string): number;
}

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** Stripe's form encoding: `a[b][0][c]=v` into nested objects and arrays. */
export function decodeForm(body: string): Json {
  const root: Json = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const path = key.replace(/\]/g, '').split('[');
    let node: any = root;
    path.forEach((part, index) => {
      if (index === path.length - 1) {
        node[part] = value;
        return;
      }
      const nextIsIndex = /^\d+$/.test(path[index + 1]!);
      node[part] ??= nextIsIndex ? [] : {};
      node = node[part];
    });
  }
  return root;
}

function sign(payload: string, secret: string, timestamp: number): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${payload}`).digest('hex')}`;
}

function addMonth(seconds: number): number {
  const date = new Date(seconds * 1000);
  date.setUTCMonth(date.getUTCMonth() + 1);
  return Math.floor(date.getTime() / 1000);
}

class StripeApiError extends Error {
  readonly status: number;
  readonly body: Json;
  constructor(status: number, error: Json) {
    super(String(error.message));
    this.status = status;
    this.body = { error: { type: 'invalid_request_error', ...error } };
  }
}

const missing = (what: string, id: string) => new StripeApiError(404, { code: 'resource_missing', message: `No such ${what}: '${id}'`, param: 'id' });

export async function startFakeStripe(scope: Scope, options: { clock: Clock; meterEventName?: string }): Promise<FakeStripe> {
  const { clock } = options;
  const meterEventName = options.meterEventName ?? 'messages_sent';
  const secretKey = `sk_test_${randomBytes(12).toString('hex')}`;
  const webhookSecret = `whsec_${randomBytes(16).toString('hex')}`;
  const prices = { pro: newId('price'), scale: newId('price'), metered: newId('price') };
  const customers = new Map<string, Json>();
  const checkoutSessions = new Map<string, Json>();
  const portalSessions = new Map<string, Json>();
  const subscriptions = new Map<string, Json>();
  const invoices = new Map<string, Json>();
  const meterEvents: MeterEvent[] = [];
  const apiVersions = new Set<string>();
  /** Stripe keeps each POST's answer under its Idempotency-Key (24 h) and replays it for the same key. */
  const idempotent = new Map<string, { status: number; body: Json }>();
  let webhookTarget: string | undefined;
  let cutsLeft = 0;
  let url = '';
  const now = () => Math.floor(clock.now().getTime() / 1000);

  function priceObject(id: string): Json {
    return { id, object: 'price', active: true, currency: 'usd', recurring: { interval: 'month', usage_type: id === prices.metered ? 'metered' : 'licensed' } };
  }

  function event(type: string, object: Json): StripeEvent {
    return {
      id: newId('evt'),
      object: 'event',
      api_version: STRIPE_API_VERSION,
      created: now(),
      type,
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      data: { object: structuredClone(object) },
    };
  }

  function invoiceFor(subscription: Json, status: 'paid' | 'open'): Json {
    const invoice = {
      id: newId('in'),
      object: 'invoice',
      customer: subscription.customer,
      status,
      amount_due: 4900,
      currency: 'usd',
      created: now(),
      livemode: false,
      parent: { type: 'subscription_details', quote_details: null, subscription_details: { subscription: subscription.id, metadata: subscription.metadata } },
    };
    invoices.set(invoice.id, invoice);
    subscription.latest_invoice = invoice.id;
    return invoice;
  }

  async function deliverAll(events: StripeEvent[], deliver: boolean | undefined) {
    if (deliver !== false) for (const e of events) await fake.deliver(e);
    return events;
  }

  const routes: { method: string; pattern: RegExp; handle: (params: string[], body: Json) => Json }[] = [
    {
      method: 'POST',
      pattern: /^\/v1\/customers$/,
      handle: (_params, body) => {
        const customer = {
          id: newId('cus'),
          object: 'customer',
          created: now(),
          name: body.name ?? null,
          email: null,
          metadata: body.metadata ?? {},
          livemode: false,
        };
        customers.set(customer.id, customer);
        return customer;
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/checkout\/sessions$/,
      handle: (_params, body) => {
        if (body.mode !== 'subscription') throw new StripeApiError(400, { message: 'This fake takes subscription mode only.', param: 'mode' });
        if (!customers.has(body.customer)) throw missing('customer', body.customer);
        const lineItems = (body.line_items ?? []) as Json[];
        for (const [index, item] of lineItems.entries()) {
          if (!Object.values(prices).includes(item.price)) throw missing('price', item.price);
          if (item.price === prices.metered && item.quantity !== undefined)
            throw new StripeApiError(400, {
              message: 'Quantity should not be specified where usage_type is `metered`.',
              param: `line_items[${index}][quantity]`,
            });
        }
        const id = `cs_test_${randomBytes(16).toString('hex')}`;
        const session = {
          id,
          object: 'checkout.session',
          mode: 'subscription',
          status: 'open',
          payment_status: 'unpaid',
          customer: body.customer,
          subscription: null,
          client_reference_id: body.client_reference_id ?? null,
          metadata: body.metadata ?? {},
          success_url: body.success_url,
          cancel_url: body.cancel_url,
          url: `${url}/pay/${id}`,
          created: now(),
          expires_at: now() + 24 * 3600,
          livemode: false,
          // Kept for paying; Stripe returns line items only when expanded.
          _line_items: lineItems,
          _subscription_metadata: body.subscription_data?.metadata ?? {},
        };
        checkoutSessions.set(id, session);
        return session;
      },
    },
    {
      method: 'GET',
      pattern: /^\/v1\/checkout\/sessions\/([^/]+)$/,
      handle: ([id]) => {
        const session = checkoutSessions.get(id!);
        if (!session) throw missing('checkout.session', id!);
        return session;
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/billing_portal\/sessions$/,
      handle: (_params, body) => {
        if (!customers.has(body.customer)) throw missing('customer', body.customer);
        const session = {
          id: newId('bps'),
          object: 'billing_portal.session',
          customer: body.customer,
          return_url: body.return_url ?? null,
          created: now(),
          livemode: false,
          url: '',
        };
        session.url = `${url}/portal/${session.id}`;
        portalSessions.set(session.id, session);
        return session;
      },
    },
    {
      method: 'GET',
      pattern: /^\/v1\/subscriptions\/([^/]+)$/,
      handle: ([id]) => {
        const subscription = subscriptions.get(id!);
        if (!subscription) throw missing('subscription', id!);
        return subscription;
      },
    },
    {
      method: 'GET',
      pattern: /^\/v1\/invoices\/([^/]+)$/,
      handle: ([id]) => {
        const invoice = invoices.get(id!);
        if (!invoice) throw missing('invoice', id!);
        return invoice;
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/billing\/meter_events$/,
      handle: (_params, body) => {
        if (body.event_name !== meterEventName)
          throw new StripeApiError(400, { message: `No active meter was found for event_name ${body.event_name}.`, param: 'event_name' });
        const customer = body.payload?.stripe_customer_id;
        if (!customers.has(customer)) throw new StripeApiError(400, { message: `No customer found for ${customer}.`, param: 'payload[stripe_customer_id]' });
        const value = Number(body.payload?.value);
        if (!Number.isFinite(value) || !/^\d+(\.\d+)?$/.test(String(body.payload?.value)))
          throw new StripeApiError(400, { message: 'The value must be a number.', param: 'payload[value]' });
        const timestamp = Number(body.timestamp ?? now());
        if (timestamp < now() - 35 * 24 * 3600 || timestamp > now() + 300)
          throw new StripeApiError(400, {
            message: 'Timestamp must be within the past 35 calendar days and at most 5 minutes in the future.',
            param: 'timestamp',
          });
        const identifier = String(body.identifier ?? newId('mev'));
        if (meterEvents.some((e) => e.identifier === identifier)) {
          throw new StripeApiError(400, {
            code: 'resource_already_exists',
            message: `An event already exists with identifier ${identifier}.`,
            param: 'identifier',
          });
        }
        meterEvents.push({ identifier, event_name: body.event_name, customer, value, timestamp });
        return { object: 'billing.meter_event', created: now(), event_name: body.event_name, identifier, livemode: false, payload: body.payload, timestamp };
      },
    },
  ];

  function send(response: ServerResponse, status: number, body: Json, headers: Record<string, string> = {}): void {
    const text = JSON.stringify(body, (key, value: unknown) => (key.startsWith('_') ? undefined : value), 2);
    response.writeHead(status, { 'content-type': 'application/json', 'request-id': newId('req'), 'stripe-version': STRIPE_API_VERSION, ...headers }).end(text);
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = new URL(request.url ?? '/', 'http://fake').pathname;

    // The pay page: what the checkout URL shows; its button completes the checkout.
    const pay = /^\/pay\/([^/]+)$/.exec(path);
    if (pay) {
      const session = checkoutSessions.get(pay[1]!);
      if (!session) return void response.writeHead(404).end('no such checkout');
      if (request.method === 'POST') {
        await fake.pay(session.id);
        return void response.writeHead(303, { location: session.success_url }).end();
      }
      return void response.writeHead(200, { 'content-type': 'text/html' }).end(`<form method="post"><button>Pay</button></form>`);
    }

    if (request.headers.authorization !== `Bearer ${secretKey}`) {
      return send(response, 401, { error: { type: 'invalid_request_error', message: 'Invalid API Key provided.' } });
    }
    const version = request.headers['stripe-version'];
    if (typeof version === 'string') apiVersions.add(version);
    if (request.method === 'POST' && !String(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      return send(response, 400, { error: { type: 'invalid_request_error', message: 'Requests must be form-encoded.' } });
    }
    const key = request.method === 'POST' ? request.headers['idempotency-key'] : undefined;
    for (const route of routes) {
      const match = route.method === request.method ? route.pattern.exec(path) : null;
      if (!match) continue;
      const replay = typeof key === 'string' ? idempotent.get(key) : undefined;
      let answer: { status: number; body: Json; headers?: Record<string, string> };
      if (replay) answer = { ...replay, headers: { 'idempotent-replayed': 'true' } };
      else {
        try {
          answer = { status: 200, body: route.handle(match.slice(1), decodeForm(raw)) };
        } catch (error) {
          if (!(error instanceof StripeApiError)) throw error;
          answer = { status: error.status, body: error.body };
        }
        if (typeof key === 'string') idempotent.set(key, answer);
      }
      if (route.pattern.source.includes('meter_events') && cutsLeft > 0) {
        cutsLeft--;
        // Processed (or replayed); the answer never arrives.
        request.socket.destroy();
        return;
      }
      return send(response, answer.status, answer.body, answer.headers);
    }
    send(response, 404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${request.method}: ${path}).` } });
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) send(response, 500, { error: { type: 'api_error', message: String(error) } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  scope.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );

  const fake: FakeStripe = {
    url,
    secretKey,
    webhookSecret,
    prices,
    env: {
      STRIPE_SECRET_KEY: secretKey,
      STRIPE_WEBHOOK_SECRET: webhookSecret,
      STRIPE_PRICE_PRO: prices.pro,
      STRIPE_PRICE_SCALE: prices.scale,
      STRIPE_PRICE_METERED: prices.metered,
      STRIPE_METER_EVENT_NAME: meterEventName,
      STRIPE_API_URL: url,
    },
    customers,
    checkoutSessions,
    subscriptions,
    invoices,
    meterEvents,
    apiVersions,

    sendWebhooksTo(serviceUrl) {
      webhookTarget = serviceUrl;
    },

    async pay(sessionId, payOptions = {}) {
      const session = checkoutSessions.get(sessionId);
      if (!session) throw new Error(`no checkout session ${sessionId}`);
      if (session.status !== 'open') throw new Error(`checkout session ${sessionId} is ${session.status}`);
      const start = now();
      const subscription: Json = {
        id: newId('sub'),
        object: 'subscription',
        customer: session.customer,
        status: 'active',
        cancel_at_period_end: false,
        canceled_at: null,
        created: start,
        livemode: false,
        metadata: session._subscription_metadata,
        latest_invoice: null,
        items: { object: 'list', has_more: false, url: '/v1/subscription_items', data: [] as Json[] },
      };
      subscription.items.data = (session._line_items as Json[]).map((item) => ({
        id: newId('si'),
        object: 'subscription_item',
        subscription: subscription.id,
        price: priceObject(item.price),
        ...(item.price === prices.metered ? {} : { quantity: Number(item.quantity ?? 1) }),
        current_period_start: start,
        current_period_end: addMonth(start),
        created: start,
        metadata: {},
      }));
      subscriptions.set(subscription.id, subscription);
      const invoice = invoiceFor(subscription, 'paid');
      Object.assign(session, { status: 'complete', payment_status: 'paid', subscription: subscription.id });
      const events = [event('customer.subscription.created', subscription), event('checkout.session.completed', session), event('invoice.paid', invoice)];
      return { subscription, events: await deliverAll(events, payOptions.deliver) };
    },

    async failPayment(subscriptionId, failOptions = {}) {
      const subscription = subscriptions.get(subscriptionId);
      if (!subscription) throw new Error(`no subscription ${subscriptionId}`);
      const invoice = invoiceFor(subscription, 'open');
      subscription.status = 'past_due';
      return deliverAll([event('invoice.payment_failed', invoice), event('customer.subscription.updated', subscription)], failOptions.deliver);
    },

    async cancel(subscriptionId, cancelOptions = {}) {
      const subscription = subscriptions.get(subscriptionId);
      if (!subscription) throw new Error(`no subscription ${subscriptionId}`);
      Object.assign(subscription, { status: 'canceled', canceled_at: now() });
      return deliverAll([event('customer.subscription.deleted', subscription)], cancelOptions.deliver);
    },

    async deliver(e, deliverOptions = {}) {
      if (!webhookTarget) throw new Error('sendWebhooksTo(service URL) first');
      const payload = JSON.stringify(e, null, 2);
      const signature = deliverOptions.signature ?? sign(payload, deliverOptions.secret ?? webhookSecret, deliverOptions.timestamp ?? now());
      const response = await fetch(`${webhookTarget}/billing/stripe/webhook`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'stripe-signature': signature,
          'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
        },
        body: payload,
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    },

    cutAfterAccepting(count) {
      cutsLeft = count;
    },

    meteredTotal(customerId) {
      return meterEvents.filter((e) => e.customer === customerId).reduce((sum, e) => sum + e.value, 0);
    },
  };
  return fake;
}
