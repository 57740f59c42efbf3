/**
 * Verifying a webhook delivery and reading it as a typed event. The signature check is the service's
 * own (src/events/webhook-signature.ts, built into this package unchanged): the 5-minute tolerance,
 * and any number of secrets, so that both are accepted during a rotation.
 *
 * A subpath of its own (`@messaging-service/client/webhooks`): it needs `node:crypto`, and the
 * client itself runs wherever `fetch` does.
 */
import { SIGNATURE_HEADER, verifyWebhookSignature, type VerificationResult } from '../../../src/events/webhook-signature.ts';
import type { components } from './generated/events.ts';
import type { Approval, Automation, Connection, Contact, Conversation, Lock, Message, Notification, Run, Template, WebhookEndpoint } from './types.ts';

export { SIGNATURE_HEADER };

type Envelope = components['schemas']['EventEnvelope'];
export type UsageThreshold = components['schemas']['UsageThreshold'];

/** The 33 event types (docs/reference/events.md). */
export type EventType = Envelope['type'];

/** What each type's `data.object` is: the resource as its GET answers it (from the services that emit them). */
export type EventObject<T extends EventType> = T extends `message.${string}`
  ? Message
  : T extends `conversation.lock_${string}`
    ? Lock
    : T extends `conversation.${string}`
      ? Conversation
      : T extends `contact.${string}`
        ? Contact
        : T extends `connection.${string}` | `onboarding.${string}`
          ? Connection
          : T extends `template.${string}`
            ? Template
            : T extends `notification.${string}`
              ? Notification
              : T extends `automation.run_${string}`
                ? Run
                : T extends `automation.${string}`
                  ? Automation
                  : T extends `approval.${string}`
                    ? Approval
                    : T extends `usage.${string}`
                      ? UsageThreshold
                      : T extends 'ping'
                        ? WebhookEndpoint
                        : never;

/** The event envelope, one member per type: `switch (event.type)` narrows `event.data.object`. */
export type WebhookEvent = {
  [T in EventType]: Omit<Envelope, 'type' | 'data'> & { type: T; data: { object: EventObject<T> } };
}[EventType];

export type VerificationFailure = Extract<VerificationResult, { valid: false }>['reason'];

/** The delivery is not proven to come from the service: answer it 400 or 401, never process it. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  readonly reason: VerificationFailure | 'malformed_body';

  constructor(reason: VerificationFailure | 'malformed_body') {
    super(`webhook delivery refused: ${reason}`);
    this.reason = reason;
  }
}

/**
 * Checks the `Service-Signature` header over the raw body (the exact bytes received, never
 * re-serialised JSON) with each secret (two during a rotation), within `toleranceSeconds` (default
 * 300) of `now`, and answers the parsed event. Throws `WebhookVerificationError` saying why otherwise.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  header: string | string[] | null | undefined,
  secrets: string | readonly string[],
  options: { toleranceSeconds?: number; now?: Date | number } = {},
): WebhookEvent {
  // Node gives a repeated header as an array; a delivery never repeats it.
  const single = Array.isArray(header) ? (header.length === 1 ? header[0] : '') : header;
  const result = verifyWebhookSignature(rawBody, single, secrets, options);
  if (!result.valid) throw new WebhookVerificationError(result.reason);
  const text = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new WebhookVerificationError('malformed_body');
  }
  if (typeof event !== 'object' || event === null || (event as { object?: unknown }).object !== 'event') throw new WebhookVerificationError('malformed_body');
  return event as WebhookEvent;
}
