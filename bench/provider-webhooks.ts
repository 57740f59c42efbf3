/**
 * Signed provider webhooks for the benches that play the provider (inbound, automations): one
 * customer's text message in the provider's envelope, signed as the provider signs it, and a loader
 * that POSTs a batch of them at `/provider/webhook` over keep-alive connections.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const PROVIDER_WEBHOOK_PATH = '/provider/webhook';

export interface BusinessNumber {
  phoneNumberId: string;
  wabaId: string;
  /** Digits only, as the provider writes it in `metadata`. */
  displayPhoneNumber: string;
}

export interface Signed {
  body: string;
  signature: string;
}

export interface TextMessage {
  /** The customer's number, digits only. */
  waId: string;
  profileName: string;
  /** Unique per message: the service files a provider message id once. */
  idSuffix: string;
  /** Epoch milliseconds. */
  sentAt: number;
  text: string;
}

/** One customer's text message, in the provider's envelope, signed as the provider signs it. */
export function signedTextMessage(number: BusinessNumber, secret: string, message: TextMessage): Signed {
  const body = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: number.wabaId,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: number.displayPhoneNumber, phone_number_id: number.phoneNumberId },
              contacts: [{ profile: { name: message.profileName }, wa_id: message.waId }],
              messages: [
                {
                  from: message.waId,
                  // The provider's ids are base64 of about 45 bytes.
                  id: `wamid.HBgM${message.idSuffix}${randomBytes(24).toString('base64url')}`,
                  timestamp: String(Math.floor(message.sentAt / 1000)),
                  type: 'text',
                  text: { body: message.text },
                },
              ],
            },
          },
        ],
      },
    ],
  });
  return { body, signature: `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` };
}

export interface PostRun {
  /** Epoch milliseconds when the first request was sent and when the last answer was read. */
  startedAt: number;
  finishedAt: number;
  /** Per request, in milliseconds, sorted. */
  latenciesMs: number[];
  /** Per request, in the order given: epoch milliseconds (fractional) when it was sent. */
  sentAt: number[];
  /** The first answer's body and content type, to check a baseline answers the same. */
  sample: { body: string; contentType: string };
}

/**
 * POSTs every envelope once, `connections` at a time over as many keep-alive connections; anything
 * but a 200 fails. With `perSecond`, envelope i is not sent before i / perSecond seconds from the
 * start (open loop while fewer than `connections` are waiting for answers).
 */
export async function postWebhooks(url: string, envelopes: Signed[], connections: number, perSecond?: number): Promise<PostRun> {
  const { Pool } = await import('undici');
  const pool = new Pool(url, { connections, pipelining: 1 });
  const latenciesMs = new Array<number>(envelopes.length);
  const sentAt = new Array<number>(envelopes.length);
  let sample: PostRun['sample'] | undefined;
  let next = 0;
  try {
    const startedAt = Date.now();
    await Promise.all(
      Array.from({ length: Math.min(connections, envelopes.length) }, async () => {
        while (next < envelopes.length) {
          const index = next++;
          const envelope = envelopes[index]!;
          if (perSecond !== undefined) {
            const dueIn = startedAt + (index * 1000) / perSecond - Date.now();
            if (dueIn > 0) await new Promise((resolve) => setTimeout(resolve, dueIn));
          }
          const sent = performance.now();
          sentAt[index] = performance.timeOrigin + sent;
          const response = await pool.request({
            path: PROVIDER_WEBHOOK_PATH,
            method: 'POST',
            headers: { 'content-type': 'application/json', 'user-agent': 'facebookexternalua', 'x-hub-signature-256': envelope.signature },
            body: envelope.body,
          });
          const text = await response.body.text();
          latenciesMs[index] = performance.now() - sent;
          if (response.statusCode !== 200) throw new Error(`POST ${url}${PROVIDER_WEBHOOK_PATH}: ${response.statusCode} ${text}`);
          sample ??= { body: text, contentType: String(response.headers['content-type']) };
        }
      }),
    );
    return { startedAt, finishedAt: Date.now(), latenciesMs: latenciesMs.sort((a, b) => a - b), sentAt, sample: sample! };
  } finally {
    await pool.close();
  }
}
