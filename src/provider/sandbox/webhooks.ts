import { createHmac } from 'node:crypto';
import { request } from 'undici';
import type { Clock } from '../../lib/clock.ts';
import { graphErrorTitle } from './graph-errors.ts';
import type { SandboxMessage, SandboxNumber } from './state.ts';

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

/** The `messages` field envelope (§3.1); `value` carries messages, statuses or errors. */
export function messagesWebhook(number: SandboxNumber, value: Record<string, unknown>): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: number.wabaId,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              // Webhook metadata carries the display number as bare digits, unlike the Graph node.
              metadata: { display_phone_number: number.displayPhoneNumber.replace(/\D/g, ''), phone_number_id: number.phoneNumberId },
              ...value,
            },
          },
        ],
      },
    ],
  };
}

export const STATUSES = ['sent', 'delivered', 'read', 'played', 'failed'] as const;
export type StatusName = (typeof STATUSES)[number];

export function unixSeconds(date: Date): string {
  return String(Math.floor(date.getTime() / 1000));
}

/** One `statuses[]` entry (§3.3): pricing only on sent and delivered, errors only on failed. */
export function statusObject(message: SandboxMessage, status: StatusName, at: Date, error?: ProviderErrorObject): Record<string, unknown> {
  const pricing =
    status === 'sent' || status === 'delivered'
      ? {
          pricing: {
            billable: !message.inWindow || message.type === 'template',
            pricing_model: 'PMP',
            type: message.inWindow ? 'free_customer_service' : 'regular',
            category: message.type === 'template' ? 'utility' : 'service',
          },
        }
      : {};
  return {
    id: message.id,
    status,
    timestamp: unixSeconds(at),
    recipient_id: message.waId,
    ...(message.bizOpaqueCallbackData === undefined ? {} : { biz_opaque_callback_data: message.bizOpaqueCallbackData }),
    ...pricing,
    ...(status === 'failed' ? { errors: [error ?? providerErrorObject(131000, 'Something went wrong.')] } : {}),
  };
}

export interface WebhookDelivery {
  body: string;
  signature: string;
  /** The receiver's HTTP status; undefined when nothing answered (no URL, refused, timed out). */
  status: number | undefined;
  error?: string;
  at: Date;
}

/**
 * Posts webhooks one at a time, in the order they were queued. The provider promises no order, but a
 * sandbox that reorders by accident makes tests flaky; disorder is asked for explicitly through the
 * control API instead. Failed deliveries are recorded, not retried.
 */
export function createWebhookSender(options: { url: string | undefined; appSecret: string; clock: Clock; timeoutMs?: number }) {
  const timeoutMs = options.timeoutMs ?? 5000;
  const deliveries: WebhookDelivery[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let tail: Promise<unknown> = Promise.resolve();

  async function post(payload: unknown): Promise<WebhookDelivery> {
    const body = escapeNonAscii(JSON.stringify(payload));
    const signature = signatureHeader(body, options.appSecret);
    const delivery: WebhookDelivery = { body, signature, status: undefined, at: options.clock.now() };
    deliveries.push(delivery);
    if (!options.url) {
      delivery.error = 'no webhook URL is configured';
      return delivery;
    }
    try {
      const response = await request(options.url, {
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
    return delivery;
  }

  return {
    deliveries,

    send(payload: unknown): Promise<WebhookDelivery> {
      const run = tail.then(() => post(payload));
      tail = run.catch(() => undefined);
      return run;
    },

    /** Runs `task` after `delayMs`; tracked so that `idle()` and `close()` know about it. */
    later(delayMs: number, task: () => void): void {
      const timer = setTimeout(() => {
        timers.delete(timer);
        task();
      }, delayMs);
      timers.add(timer);
    },

    /** Resolves once nothing is scheduled and every queued webhook has been attempted. */
    async idle(): Promise<void> {
      for (;;) {
        const seen = tail;
        await seen;
        if (timers.size === 0 && seen === tail) return;
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
