/**
 * The outbound HTTP client for webhook deliveries: the only file of this module that touches the
 * network. It decides where a delivery may go (public https addresses only, unless private networks
 * are allowed), pins each connection to the address it checked, and turns every outcome into a
 * value, so the delivery job records an attempt instead of handling exceptions.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Pool, type Dispatcher } from 'undici';
import { AppError, invalidParam } from '../../lib/errors.ts';
import { isPublicAddress } from '../../lib/network.ts';
import { assertNoRequestTransaction } from '../../lib/transaction-scope.ts';

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
  lookup?: (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;
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
// Parsing is pure, and a worker sends to the same few URLs over and over.
const MAX_PARSED_URLS = 1_024;
// One pool per (origin, pinned address). Enough for every receiver that is active at once; a pool
// that falls off the end is closed gracefully and rebuilt on its next delivery.
const MAX_DISPATCHERS = 256;
// Set by the sender itself; a caller's value would contradict the bytes actually sent.
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'user-agent',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'expect',
]);

type ParsedUrl =
  | { ok: true; origin: string; path: string; host: string; literal: boolean }
  | { ok: false; error: 'invalid_url' }
  | { ok: false; error: 'url_not_allowed'; reason: string; message: string };

function parseUrl(raw: string, allowPrivateNetworks: boolean): ParsedUrl {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, error: 'invalid_url' };
  }
  const schemes = allowPrivateNetworks ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    return {
      ok: false,
      error: 'url_not_allowed',
      reason: `scheme ${url.protocol}`,
      message: `must use ${allowPrivateNetworks ? 'https or http' : 'https'} (got ${url.protocol.replace(/:$/, '')})`,
    };
  }
  if (url.username !== '' || url.password !== '') {
    return { ok: false, error: 'url_not_allowed', reason: 'credentials', message: 'must not carry credentials (user:password@)' };
  }
  // The URL parser has already turned every spelling of an IP address (2130706433, 0x7f.1, [::ffff:7f00:1])
  // into its canonical form, so a literal address cannot hide from the check below.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (host === '') return { ok: false, error: 'url_not_allowed', reason: 'no_host', message: 'must name a host' };
  return { ok: true, origin: url.origin, path: url.pathname + url.search, host, literal: isIP(host) !== 0 };
}

async function defaultLookup(hostname: string): Promise<{ address: string; family: 4 | 6 }[]> {
  const found = await dnsLookup(hostname, { all: true });
  return found.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

/** Connects a pool to one address whatever name it dials, so nothing re-resolves between check and connect. */
function pinnedLookup(address: string): LookupFunction {
  const family = isIP(address);
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function errorCode(error: unknown): string | undefined {
  if (error instanceof AggregateError && error.errors.length > 0) return errorCode(error.errors[0]);
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH|ERR_OSSL_)/;

/** A short, stable description of why an exchange failed: what the attempt log records. */
function describeFailure(error: unknown): string {
  const code = errorCode(error);
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'ETIMEDOUT':
      return 'timeout';
    case 'ECONNREFUSED':
      return 'connection_refused';
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return 'connection_reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'ENODATA':
      return 'dns_failed';
    case 'EHOSTUNREACH':
      return 'host_unreachable';
    case 'ENETUNREACH':
      return 'network_unreachable';
  }
  if (code !== undefined && TLS_CODE.test(code)) return `tls_error: ${code}`;
  if (code !== undefined) return `request_failed: ${code}`;
  return `request_failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 200);
}

function excerptOf(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  if (text.length <= EXCERPT_CHARACTERS) return text;
  // Never end on half of a surrogate pair: it would not survive being stored as text.
  const last = text.charCodeAt(EXCERPT_CHARACTERS - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? EXCERPT_CHARACTERS - 1 : EXCERPT_CHARACTERS);
}

/**
 * Reads the body until it ends, `maxBytes` have arrived or the body budget runs out, keeping only the
 * bytes the excerpt needs. Stopping early destroys the body, which closes that connection instead of
 * draining the rest of it. Plain listeners, not an async iterator: this runs on every delivery, and
 * they cost measurably less.
 */
function readExcerpt(body: Dispatcher.ResponseData['body'], maxBytes: number, budgetMs: number): Promise<string> {
  return new Promise((resolve) => {
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let readBytes = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      body.off('data', onData);
      if (!body.readableEnded) body.destroy();
      resolve(excerptOf(kept.length === 1 ? kept[0]! : Buffer.concat(kept, keptBytes)));
    };
    const onData = (chunk: Buffer) => {
      readBytes += chunk.length;
      if (keptBytes < EXCERPT_BYTES) {
        const piece = chunk.length <= EXCERPT_BYTES - keptBytes ? chunk : chunk.subarray(0, EXCERPT_BYTES - keptBytes);
        kept.push(piece);
        keptBytes += piece.length;
      }
      if (readBytes >= maxBytes) finish();
    };
    const timer = setTimeout(finish, budgetMs);
    // A body cut off by the receiver after the headers still leaves the status standing.
    body.on('error', finish);
    body.on('end', finish);
    body.on('close', finish);
    body.on('data', onData);
  });
}

class TimeoutSignal extends Error {}

/** Rejects as soon as the signal aborts, so a resolver that hangs cannot outlive the time-out. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new TimeoutSignal());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([work, aborted]).finally(() => signal.removeEventListener('abort', onAbort!));
}

export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const allowPrivate = options.allowPrivateNetworks;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
  const lookup = options.lookup ?? defaultLookup;
  for (const [name, value] of [
    ['timeoutMs', timeoutMs],
    ['maxResponseBytes', maxResponseBytes],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a whole number of at least 1 (got ${value})`);
  }
  const bodyBudgetMs = Math.min(BODY_READ_MS, timeoutMs);
  // Insertion order doubles as recency: a hit is moved to the end, so the first entry is the coldest.
  const dispatchers = new Map<string, Pool>();
  let newestKey: string | undefined;
  let closed = false;

  function dispatcherFor(origin: string, address: string): Pool {
    const key = `${origin} ${address}`;
    const cached = dispatchers.get(key);
    if (cached) {
      if (key !== newestKey) {
        dispatchers.delete(key);
        dispatchers.set(key, cached);
        newestKey = key;
      }
      return cached;
    }
    if (dispatchers.size >= MAX_DISPATCHERS) {
      const [coldKey, coldPool] = dispatchers.entries().next().value!;
      dispatchers.delete(coldKey);
      // close() lets requests already queued on it finish; only idle connections go at once.
      coldPool.close().catch(() => undefined);
    }
    const pool = new Pool(origin, {
      // The lookup is what pins the address; TLS still dials the hostname, so SNI and the
      // certificate check stay on the name the customer registered.
      connect: { lookup: pinnedLookup(address), timeout: timeoutMs },
      // Back-stops only: the sender's own timer (which also covers resolution and queueing) fires first.
      headersTimeout: timeoutMs,
      bodyTimeout: bodyBudgetMs,
      // One request per connection at a time: a time-out or a cut body closes exactly one
      // delivery's connection, never a session shared with others.
      allowH2: false,
    });
    dispatchers.set(key, pool);
    newestKey = key;
    return pool;
  }

  /** Resolved now, every time, keeping only well-formed addresses. */
  async function resolveName(host: string): Promise<string[]> {
    assertNoRequestTransaction('a name lookup');
    const found = await lookup(host);
    return found.map((entry) => entry.address).filter((address) => isIP(address) !== 0);
  }

  const parsedUrls = new Map<string, ParsedUrl>();
  function parseCached(url: string): ParsedUrl {
    let parsed = parsedUrls.get(url);
    if (parsed === undefined) {
      if (parsedUrls.size >= MAX_PARSED_URLS) parsedUrls.clear();
      parsed = parseUrl(url, allowPrivate);
      parsedUrls.set(url, parsed);
    }
    return parsed;
  }

  async function checkUrl(url: string, param: string): Promise<void> {
    const parsed = parseUrl(url, allowPrivate);
    if (!parsed.ok) {
      if (parsed.error === 'invalid_url') throw invalidParam(param, 'must be an absolute URL such as https://example.com/webhooks', 'invalid_url');
      throw new AppError('url_not_allowed', `The URL ${parsed.message}.`, { param });
    }
    // Local development and tests point endpoints at loopback receivers on purpose.
    if (allowPrivate) return;
    let addresses: string[];
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TimeoutSignal()), timeoutMs);
    try {
      addresses = parsed.literal ? [parsed.host] : await raceAbort(resolveName(parsed.host), controller.signal);
    } catch (error) {
      const why = error instanceof TimeoutSignal ? 'in time' : `(${errorCode(error) ?? 'lookup failed'})`;
      throw new AppError('url_not_allowed', `The URL's host ${parsed.host} could not be resolved ${why}; check the host name.`, { param, cause: error });
    } finally {
      clearTimeout(timer);
    }
    if (addresses.length === 0) {
      throw new AppError('url_not_allowed', `The URL's host ${parsed.host} resolves to no address; check the host name.`, { param });
    }
    // Every address, not just the first: resolvers rotate answers, and any of them may be dialled later.
    const refused = addresses.find((address) => !isPublicAddress(address));
    if (refused !== undefined) {
      const where = parsed.literal ? refused : `${parsed.host} (${refused})`;
      throw new AppError(
        'url_not_allowed',
        `The URL points at ${where}, which is not a public internet address (loopback, private, link-local, metadata and other reserved ranges are refused).`,
        { param },
      );
    }
  }

  async function send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    assertNoRequestTransaction('a webhook receiver');
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    if (closed) return { kind: 'error', error: 'sender_closed', durationMs: 0 };
    const parsed = parseCached(url);
    if (!parsed.ok) {
      return { kind: 'error', error: parsed.error === 'invalid_url' ? 'invalid_url' : `url_not_allowed: ${parsed.reason}`, durationMs: elapsed() };
    }

    // One deadline for resolution, queueing, connecting, sending and waiting for the headers: the
    // spec's time-out is the receiver's whole budget, not a per-phase allowance.
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new TimeoutSignal());
    }, timeoutMs);
    try {
      let addresses: string[];
      try {
        addresses = parsed.literal ? [parsed.host] : await raceAbort(resolveName(parsed.host), controller.signal);
      } catch {
        return { kind: 'error', error: timedOut ? 'timeout' : 'dns_failed', durationMs: elapsed() };
      }
      if (addresses.length === 0) return { kind: 'error', error: 'dns_failed', durationMs: elapsed() };
      const address = allowPrivate ? addresses[0]! : addresses.find(isPublicAddress);
      if (address === undefined) return { kind: 'error', error: `address_not_allowed: ${addresses[0]}`, durationMs: elapsed() };

      const outgoing: Record<string, string> = {};
      for (const [name, value] of Object.entries(headers)) {
        const lower = name.toLowerCase();
        if (!RESERVED_HEADERS.has(lower)) outgoing[lower] = value;
      }
      outgoing['content-type'] = 'application/json';
      outgoing['user-agent'] = userAgent;

      // A close() that ran during the lookup has already closed every pool; a new one would leak.
      if (closed) return { kind: 'error', error: 'sender_closed', durationMs: elapsed() };
      // Taken and used synchronously, so an eviction can never close it between the two.
      const response = await dispatcherFor(parsed.origin, address).request({
        origin: parsed.origin,
        path: parsed.path,
        method: 'POST',
        headers: outgoing,
        body,
        signal: controller.signal,
      });
      clearTimeout(timer);
      const excerpt = await readExcerpt(response.body, maxResponseBytes, bodyBudgetMs);
      return { kind: 'response', status: response.statusCode, excerpt, durationMs: elapsed() };
    } catch (error) {
      return { kind: 'error', error: timedOut ? 'timeout' : describeFailure(error), durationMs: elapsed() };
    } finally {
      clearTimeout(timer);
    }
  }

  async function close(): Promise<void> {
    closed = true;
    const pools = [...dispatchers.values()];
    dispatchers.clear();
    await Promise.all(pools.map((pool) => pool.close().catch(() => undefined)));
  }

  return { checkUrl, send, close };
}
