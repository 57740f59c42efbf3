import { createHmac, randomInt } from 'node:crypto';
import { request } from 'undici';
import type { Clock } from '../../lib/clock.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { graphErrorTitle } from './graph-errors.ts';
import { FREE_ENTRY_POINT_MS, type SandboxMessage, type SandboxNumber } from './state.ts';
import { newSeq, type SandboxStore } from './store/index.ts';

/**
 * The provider serialises webhooks with every non-ASCII character escaped as a lowercase `\uXXXX`
 * and signs those bytes (§4). Receivers that verify the raw body must therefore see exactly this
 * form, so the sandbox escapes the same way instead of sending plain UTF-8.
 */
export function escapeNonAscii(json: string): string {
  return json.replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function signatureHeader(body: string | Buffer, appSecret: string): string {
  return `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`;
}

export interface ProviderErrorObject {
  code: number;
  title: string;
  message: string;
  error_data: { details: string };
  href: string;
}

export function providerErrorObject(code: number, details: string, title?: string): ProviderErrorObject {
  const resolvedTitle = title ?? graphErrorTitle(code);
  return {
    code,
    title: resolvedTitle,
    message: resolvedTitle,
    error_data: { details },
    href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
  };
}

/** Webhook metadata carries the display number as bare digits, unlike the Graph node. */
export function displayDigits(number: SandboxNumber): string {
  return number.displayPhoneNumber.replace(/\D/g, '');
}

/** The `value.messaging_product` and `value.metadata` of the number-scoped fields (§3.1). */
export function numberMetadata(number: SandboxNumber): Record<string, unknown> {
  return { messaging_product: 'whatsapp', metadata: { display_phone_number: displayDigits(number), phone_number_id: number.phoneNumberId } };
}

/**
 * The envelope of one change (§3.1). Fields other than `messages` carry `entry[].time`; the number-
 * scoped ones (`messages`, `history`, `smb_message_echoes`, `smb_app_state_sync`) open their value with
 * the number's metadata, the account-scoped ones put their data directly in `value`.
 */
export function webhookEnvelope(wabaId: string, field: string, value: Record<string, unknown>, at?: Date): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: [{ id: wabaId, ...(at === undefined || field === 'messages' ? {} : { time: Math.floor(at.getTime() / 1000) }), changes: [{ field, value }] }],
  };
}

/** The `messages` field envelope (§3.1); `value` carries messages, statuses or errors. */
export function messagesWebhook(number: SandboxNumber, value: Record<string, unknown>): Record<string, unknown> {
  return webhookEnvelope(number.wabaId, 'messages', { ...numberMetadata(number), ...value });
}

export const STATUSES = ['sent', 'delivered', 'read', 'played', 'failed'] as const;
export type StatusName = (typeof STATUSES)[number];

export function unixSeconds(date: Date): string {
  return String(Math.floor(date.getTime() / 1000));
}

/**
 * Per-message pricing (§9): service messages are free inside the window; utility templates too;
 * marketing and authentication templates are always charged; everything is free in a free entry
 * point window opened by an ad referral.
 */
function pricingOf(message: SandboxMessage): Record<string, unknown> {
  if (message.freeEntryPoint) return { billable: false, pricing_model: 'PMP', type: 'free_entry_point', category: 'referral_conversion' };
  const category = message.templateCategory ?? 'service';
  const free = message.inWindow && (category === 'service' || category === 'utility');
  return { billable: !free, pricing_model: 'PMP', type: free ? 'free_customer_service' : 'regular', category };
}

/**
 * One `statuses[]` entry (§3.3): pricing only on sent and delivered, errors only on failed. The
 * `conversation` object is left out, as v24+ does, except in a free entry point conversation.
 */
export function statusObject(message: SandboxMessage, status: StatusName, at: Date, error?: ProviderErrorObject): Record<string, unknown> {
  const priced = status === 'sent' || status === 'delivered';
  const pricing = priced ? { pricing: pricingOf(message) } : {};
  const conversation =
    priced && message.freeEntryPoint
      ? {
          conversation: {
            id: sha256Hex(message.id).slice(0, 32),
            expiration_timestamp: unixSeconds(new Date(message.createdAt.getTime() + FREE_ENTRY_POINT_MS)),
            origin: { type: 'referral_conversion' },
          },
        }
      : {};
  return {
    id: message.id,
    status,
    timestamp: unixSeconds(at),
    recipient_id: message.waId,
    ...(message.bizOpaqueCallbackData === undefined ? {} : { biz_opaque_callback_data: message.bizOpaqueCallbackData }),
    ...conversation,
    ...pricing,
    ...(status === 'failed' ? { errors: [error ?? providerErrorObject(131000, 'Something went wrong.')] } : {}),
  };
}

export interface WebhookDelivery {
  body: string;
  signature: string;
  /** Where it was posted; undefined when it was not sent (no URL, or no app subscribed). */
  url: string | undefined;
  /** The receiver's HTTP status; undefined when nothing answered (not sent, refused, timed out). */
  status: number | undefined;
  error?: string;
  at: Date;
}

/** How many of the latest deliveries the log (`GET /control/webhooks`, `sandbox.deliveries()`) keeps. */
export const WEBHOOK_LOG_SIZE = 10_000;

/** Where one webhook goes: a URL, or nowhere and why (recorded all the same). */
export type WebhookTarget = { url: string } | { skip: string };

/**
 * Posts webhooks one at a time, in the order they were queued. The provider promises no order, but a
 * sandbox that reorders by accident makes tests flaky; disorder is asked for explicitly through the
 * control API instead. Failed deliveries are recorded, not retried. The log is in the store, so it
 * shows what every process serving the sandbox sent; the queue and the timers are this process's.
 */
export function createWebhookSender(options: { store: SandboxStore; appSecret: string; clock: Clock; timeoutMs?: number; logSize?: number }) {
  const { db } = options.store;
  const timeoutMs = options.timeoutMs ?? 5000;
  const logSize = options.logSize ?? WEBHOOK_LOG_SIZE;
  const timers = new Set<NodeJS.Timeout>();
  let tail: Promise<unknown> = Promise.resolve();
  let loggedSinceTrim = 0;
  // Timed tasks that fired and have not settled yet.
  let running = 0;

  async function log(delivery: WebhookDelivery): Promise<void> {
    await db
      .insertInto('sandbox_webhooks')
      .values({
        seq: newSeq(delivery.at),
        body: delivery.body,
        signature: delivery.signature,
        url: delivery.url ?? null,
        status: delivery.status ?? null,
        error: delivery.error ?? null,
        at: delivery.at.toISOString(),
      })
      .execute();
    // Trimmed in batches, so that keeping the log bounded costs little per delivery.
    loggedSinceTrim += 1;
    if (loggedSinceTrim >= Math.max(1, logSize / 10)) {
      loggedSinceTrim = 0;
      const oldestKept = await db.selectFrom('sandbox_webhooks').select('seq').orderBy('seq', 'desc').offset(logSize).limit(1).executeTakeFirst();
      if (oldestKept !== undefined) await db.deleteFrom('sandbox_webhooks').where('seq', '<=', oldestKept.seq).execute();
    }
  }

  async function post(payload: unknown, target: WebhookTarget): Promise<WebhookDelivery> {
    const body = escapeNonAscii(JSON.stringify(payload));
    const signature = signatureHeader(body, options.appSecret);
    const url = 'url' in target ? target.url : undefined;
    const delivery: WebhookDelivery = { body, signature, url, status: undefined, at: options.clock.now() };
    if (url === undefined) {
      delivery.error = 'skip' in target ? target.skip : 'no webhook URL is configured';
    } else {
      try {
        const response = await request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature, 'user-agent': 'facebookexternalua' },
          body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        await response.body.dump();
        delivery.status = response.statusCode;
      } catch (error) {
        delivery.error = error instanceof Error ? error.message : String(error);
      }
    }
    await log(delivery);
    return delivery;
  }

  return {
    /** The latest deliveries, oldest first (`GET /control/webhooks`). */
    async deliveries(): Promise<WebhookDelivery[]> {
      const rows = await db.selectFrom('sandbox_webhooks').selectAll().orderBy('seq', 'desc').limit(logSize).execute();
      return rows.reverse().map((row) => ({
        body: row.body,
        signature: row.signature,
        url: row.url ?? undefined,
        status: row.status ?? undefined,
        ...(row.error === null ? {} : { error: row.error }),
        at: new Date(row.at),
      }));
    },

    send(payload: unknown, target: WebhookTarget): Promise<WebhookDelivery> {
      const run = tail.then(() => post(payload, target));
      tail = run.catch(() => undefined);
      return run;
    },

    /**
     * Runs `task` after `delayMs`; tracked until the task has settled, so that `idle()` and `close()`
     * know about it while it reads the store before queuing its webhook.
     */
    later(delayMs: number, task: () => Promise<unknown>): void {
      const timer = setTimeout(() => {
        timers.delete(timer);
        running += 1;
        // A step that fails (the store closed under it at shutdown) is dropped like an unanswered
        // webhook: it must not take the host down.
        void task()
          .catch(() => undefined)
          .finally(() => {
            running -= 1;
          });
      }, delayMs);
      timers.add(timer);
    },

    /** Resolves once nothing is scheduled or running and every queued webhook has been attempted. */
    async idle(): Promise<void> {
      for (;;) {
        const seen = tail;
        await seen;
        if (timers.size === 0 && running === 0 && seen === tail) return;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },

    close(): void {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

export type WebhookSender = ReturnType<typeof createWebhookSender>;

/**
 * The provider's subscription handshake (§4): GET the callback with `hub.*` parameters and expect the
 * challenge echoed back with HTTP 200. Resolves to whether the receiver answered correctly.
 */
export async function verifyCallback(callbackUrl: string, verifyToken: string, timeoutMs = 5000): Promise<boolean> {
  const challenge = String(randomInt(1, 2 ** 31));
  const url = new URL(callbackUrl);
  url.searchParams.set('hub.mode', 'subscribe');
  url.searchParams.set('hub.verify_token', verifyToken);
  url.searchParams.set('hub.challenge', challenge);
  try {
    const response = await request(url, {
      method: 'GET',
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      headers: { 'user-agent': 'facebookplatform/1.0' },
    });
    const text = await response.body.text();
    return response.statusCode === 200 && text === challenge;
  } catch {
    return false;
  }
}
