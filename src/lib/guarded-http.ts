/**
 * The one outbound HTTP client for URLs a customer chose (webhook deliveries, connector requests).
 * It decides where a request may go (public https addresses only, unless private networks are
 * allowed), resolves the name on every request and pins the connection to the address it checked,
 * never follows redirects, reads at most a bounded part of the answer, and turns every outcome into a
 * value, so a caller records an attempt instead of handling exceptions.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { BoundedRead, type BodyRead, type ReadLimits } from './bounded-read.ts';
import { AppError, invalidParam } from './errors.ts';
import { isPublicAddress } from './network.ts';
import { assertNoRequestTransaction } from './transaction-scope.ts';

export interface GuardedHttpOptions {
  allowPrivateNetworks: boolean;
  /** Default 10_000: the longest a request may take (resolution, connection, request, headers); each request may ask for less. */
  timeoutMs?: number;
  /** Default: node:dns/promises lookup(hostname, { all: true }); injectable so tests can make a name resolve to anything. */
  lookup?: (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;
}

export interface GuardedRequest {
  method: string;
  url: string;
  /** Sent as given, except the hop-by-hop headers the client sets itself (host, content-length, connection, ...). */
  headers: Record<string, string>;
  body?: string | undefined;
  /** At most the client's own time-out: the whole exchange up to the answer's status and headers. */
  timeoutMs?: number;
  /** How the body is read: keep its first `keepBytes`, stop once `maxBytes` have arrived or `budgetMs` has passed. */
  read: ReadLimits;
}

export type GuardedResult =
  ({ kind: 'response'; status: number; headers: Record<string, string>; durationMs: number } & BodyRead) | { kind: 'error'; error: string; durationMs: number };

export interface GuardedHttp {
  /**
   * Checks a URL before it is stored: https only (http too when private networks are allowed), no
   * userinfo, and, unless private networks are allowed, a literal address or every address the name
   * resolves to must be public. Throws `url_not_allowed`, or `validation_failed` for a string that is
   * not a URL at all.
   */
  checkUrl(url: string, param: string): Promise<void>;
  /**
   * Sends one request. Resolves the host again on every call and connects to the address it checked.
   * Never follows redirects, reads at most `read.maxBytes` of the body, and never throws.
   */
  request(request: GuardedRequest): Promise<GuardedResult>;
  /** Closes every pooled connection. */
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 10_000;
// Parsing is pure, and a worker calls the same few URLs over and over.
const MAX_PARSED_URLS = 1_024;
// One pool per (origin, pinned address). Enough for every receiver that is active at once; a pool
// that falls off the end is closed gracefully and rebuilt on its next request.
const MAX_DISPATCHERS = 256;
// Set by the client itself; a caller's value would contradict the bytes actually sent.
const HOP_BY_HOP_HEADERS = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect']);

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

/** A short, stable description of why an exchange failed: what an attempt log records. */
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

function headersOf(raw: IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
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

export function createGuardedHttp(options: GuardedHttpOptions): GuardedHttp {
  const allowPrivate = options.allowPrivateNetworks;
  const maxTimeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const lookup = options.lookup ?? defaultLookup;
  if (!Number.isSafeInteger(maxTimeoutMs) || maxTimeoutMs < 1) throw new RangeError(`timeoutMs must be a whole number of at least 1 (got ${maxTimeoutMs})`);
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
      connect: { lookup: pinnedLookup(address), timeout: maxTimeoutMs },
      // Back-stops only: each request's own timer (which also covers resolution and queueing) fires first.
      headersTimeout: maxTimeoutMs,
      bodyTimeout: maxTimeoutMs,
      // One request per connection at a time: a time-out or a cut body closes exactly one
      // request's connection, never a session shared with others.
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
    // Local development and tests point at loopback receivers on purpose.
    if (allowPrivate) return;
    let addresses: string[];
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TimeoutSignal()), maxTimeoutMs);
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

  async function request(outgoing: GuardedRequest): Promise<GuardedResult> {
    assertNoRequestTransaction('a remote HTTP server');
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    if (closed) return { kind: 'error', error: 'sender_closed', durationMs: 0 };
    const parsed = parseCached(outgoing.url);
    if (!parsed.ok) {
      return { kind: 'error', error: parsed.error === 'invalid_url' ? 'invalid_url' : `url_not_allowed: ${parsed.reason}`, durationMs: elapsed() };
    }
    const timeoutMs = Math.min(outgoing.timeoutMs ?? maxTimeoutMs, maxTimeoutMs);

    // One deadline for resolution, queueing, connecting, sending and waiting for the headers: the
    // time-out is the peer's whole budget, not a per-phase allowance. The body has its own.
    const controller = new AbortController();
    let timedOut = false;
    let read: BoundedRead | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      const reason = new TimeoutSignal();
      controller.abort(reason);
      read?.abortUnanswered(reason);
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

      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(outgoing.headers)) {
        const lower = name.toLowerCase();
        if (!HOP_BY_HOP_HEADERS.has(lower)) headers[lower] = value;
      }

      // A close() that ran during the lookup has already closed every pool; a new one would leak.
      if (closed) return { kind: 'error', error: 'sender_closed', durationMs: elapsed() };
      read = new BoundedRead({ ...outgoing.read, budgetMs: Math.min(outgoing.read.budgetMs, timeoutMs) });
      // Taken and used synchronously, so an eviction can never close it between the two.
      dispatcherFor(parsed.origin, address).dispatch(
        {
          origin: parsed.origin,
          path: parsed.path,
          method: outgoing.method,
          headers,
          body: outgoing.body ?? null,
          headersTimeout: timeoutMs,
          bodyTimeout: Math.min(outgoing.read.budgetMs, timeoutMs),
        },
        read,
      );
      const outcome = await read.outcome;
      if (outcome.kind === 'error') return { kind: 'error', error: timedOut ? 'timeout' : describeFailure(outcome.error), durationMs: elapsed() };
      const { status, headers: answered, body, bytesRead, complete } = outcome;
      return { kind: 'response', status, headers: headersOf(answered), body, bytesRead, complete, durationMs: elapsed() };
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

  return { checkUrl, request, close };
}
