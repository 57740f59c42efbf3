/**
 * The outbound HTTP client for webhook deliveries: the only file of this module that touches the
 * network. Where a delivery may go, the pinned connection and the bounded read are the guarded
 * client's (lib/guarded-http.ts, which connector requests share); this adds what a delivery is: a
 * signed JSON POST whose outcome is a status and an excerpt of the answer for the attempt log.
 */
import type { ReadLimits } from '../../lib/bounded-read.ts';
import { createGuardedHttp, type GuardedHttpOptions } from '../../lib/guarded-http.ts';

export type SendResult = { kind: 'response'; status: number; excerpt: string; durationMs: number } | { kind: 'error'; error: string; durationMs: number };

export interface WebhookSenderOptions {
  allowPrivateNetworks: boolean;
  /** Default 10_000: the whole exchange (resolution, connection, request) up to the response status and headers. */
  timeoutMs?: number;
  /** Default 65_536: never read more of the body than this. */
  maxResponseBytes?: number;
  /** Default 'MessagingService-Webhooks/1.0'. */
  userAgent?: string;
  /** Default: node:dns/promises lookup(hostname, { all: true }); injectable so tests can make a name resolve to anything. */
  lookup?: GuardedHttpOptions['lookup'];
}

export interface WebhookSender {
  /**
   * Checks a URL when an endpoint is created or updated: https only (http too when private networks
   * are allowed), no userinfo, and, unless private networks are allowed, a literal address or every
   * address the name resolves to must be public. Throws `url_not_allowed`, or `validation_failed`
   * for a string that is not a URL at all.
   */
  checkUrl(url: string, param: string): Promise<void>;
  /**
   * POSTs the body, byte for byte, with the given headers plus content-type and user agent. Resolves
   * the host again on every call and connects to the address it checked. Never follows redirects,
   * reads at most maxResponseBytes of the body, and never throws.
   */
  send(url: string, body: string, headers: Record<string, string>): Promise<SendResult>;
  /** Closes every pooled connection. */
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 65_536;
const DEFAULT_USER_AGENT = 'MessagingService-Webhooks/1.0';
const EXCERPT_CHARACTERS = 1_000;
// A UTF-16 code unit never needs more than three UTF-8 bytes, so this always covers the excerpt.
const EXCERPT_BYTES = 3 * EXCERPT_CHARACTERS;
// The status alone decides a delivery; the body is only an excerpt for the attempt log. It gets a
// short budget of its own after the headers (2 s, or the time-out if that is shorter), so a receiver
// that trickles its body can neither turn a 2xx into a failure nor hold a worker for long.
const BODY_READ_MS = 2_000;
/** How a delivery's answer is read with the default options: an excerpt kept, the rest bounded. */
export const DEFAULT_DELIVERY_READ: ReadLimits = { keepBytes: EXCERPT_BYTES, maxBytes: DEFAULT_MAX_RESPONSE_BYTES, budgetMs: BODY_READ_MS };
// Set by the sender itself; a caller's value would contradict the bytes actually sent.
const RESERVED_HEADERS = new Set(['content-type', 'user-agent']);

function excerptOf(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  if (text.length <= EXCERPT_CHARACTERS) return text;
  // Never end on half of a surrogate pair: it would not survive being stored as text.
  const last = text.charCodeAt(EXCERPT_CHARACTERS - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? EXCERPT_CHARACTERS - 1 : EXCERPT_CHARACTERS);
}

export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
  for (const [name, value] of [
    ['timeoutMs', timeoutMs],
    ['maxResponseBytes', maxResponseBytes],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a whole number of at least 1 (got ${value})`);
  }
  const http = createGuardedHttp({ allowPrivateNetworks: options.allowPrivateNetworks, timeoutMs, ...(options.lookup ? { lookup: options.lookup } : {}) });
  const read: ReadLimits = { ...DEFAULT_DELIVERY_READ, maxBytes: maxResponseBytes, budgetMs: Math.min(BODY_READ_MS, timeoutMs) };

  async function send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const outgoing: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      if (!RESERVED_HEADERS.has(lower)) outgoing[lower] = value;
    }
    outgoing['content-type'] = 'application/json';
    outgoing['user-agent'] = userAgent;
    const result = await http.request({ method: 'POST', url, headers: outgoing, body, read });
    if (result.kind === 'error') return result;
    return { kind: 'response', status: result.status, excerpt: excerptOf(result.body), durationMs: result.durationMs };
  }

  return { checkUrl: (url, param) => http.checkUrl(url, param), send, close: () => http.close() };
}
