import { createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { Agent } from 'undici';
import { assertNoRequestTransaction } from '../../lib/transaction-scope.ts';
import { ProviderError } from '../provider.ts';
import { headerValue, transportFailure } from './graph-client.ts';
import { graphFailure, parseGraphError } from './graph-errors.ts';

/**
 * The runtime relay: the provider-knowing half of the pass-through surface (docs/runtime.md). It
 * reads a caller's Graph path, builds the provider URL without letting it leave the version root,
 * sends the caller's bytes with the connection's token in place of the caller's credential, and hands
 * back the provider's answer as it came (status, bytes, the headers that matter), with a Retry-After
 * derived from the usage headers (graph-errors.ts) on throttles. Which number or account a caller may
 * address is the runtime module's rule, not this file's.
 */

/** A Graph version as the provider writes it in the path (`v24.0`); relayed as given. */
export const GRAPH_VERSION = /^v\d{1,3}\.\d{1,2}$/;

/** RFC 3986 `pchar`: the only bytes a path segment may hold, percent-escapes included. */
const SEGMENT = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})+$/;
/** A query string's bytes: printable ASCII without `#`. */
const QUERY = /^[\x21-\x22\x24-\x7e]*$/;
const CONTROL = /[\x00-\x1f\x7f]/;

/**
 * Query parameters that carry a credential to the provider. The relay supplies the connection's token
 * itself; a caller's own token or proof would either be refused by the provider or, worse, be used
 * in place of the connection's, so they are refused rather than dropped in silence.
 */
export const CREDENTIAL_QUERY_PARAMETERS = ['access_token', 'appsecret_proof'] as const;

/** The provider's largest media (documents, 100 MB), with room for the multipart envelope around it. */
export const MAX_UPLOAD_BYTES = 100 * 1024 * 1024;
/** Every other body the provider takes (JSON, form fields) is a few kilobytes. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Graph answers are JSON pages of kilobytes; the relay reads at most this much of one. */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * Headers of the caller's request sent on: what the body is and what answer is wanted. Never the
 * caller's Authorization (replaced by the connection's token), cookies, or forwarding headers.
 */
const REQUEST_HEADERS = ['content-type', 'content-encoding', 'accept', 'if-none-match'] as const;

/**
 * Headers of the provider's answer handed back: the body's type, caching, the version that served
 * the call, the ids support asks for, and the usage headers a client paces itself by (§8.4). Not
 * relayed: hop-by-hop and length headers (the server sets its own), cookies, CORS and HSTS (the
 * service's own policy), and WWW-Authenticate, which challenges the connection's token, not the
 * caller's credential (the caller's key was accepted; a challenge would tell its HTTP client otherwise).
 */
const ANSWER_HEADERS = [
  'content-type',
  'cache-control',
  'etag',
  'last-modified',
  'retry-after',
  'facebook-api-version',
  'x-fb-trace-id',
  'x-fb-request-id',
  'x-fb-rev',
  'x-fb-debug',
  'x-business-use-case-usage',
  'x-app-usage',
] as const;

export type RelayMethod = 'GET' | 'POST' | 'DELETE';

/** A caller's Graph path and query, read and checked. */
export interface GraphTarget {
  version: string;
  /** The path segments after the version, percent-decoded (for comparing ids). */
  segments: readonly string[];
  /** The segments as the caller wrote them: what is sent. */
  rawSegments: readonly string[];
  /** The query string as the caller wrote it, without `?` ('' for none). */
  query: string;
}

export type TargetRefusal =
  | { refused: 'path'; message: string }
  /** A credential parameter in the query (`parameter` names it as sent). */
  | { refused: 'query'; parameter: string; message: string };

function refusePath(message: string): TargetRefusal {
  return { refused: 'path', message };
}

/**
 * Reads `v24.0/{node}/{edge}?{query}` (what follows `/runtime/` in the request target, undecoded).
 * Refused: a version of another shape, no node, empty segments (`//`, a trailing `/`), `.` and `..`
 * (also percent-encoded: the provider's URL parser would resolve them), an encoded `/` or `\` (a
 * segment that splits differently at the provider than here), control characters, and bytes that are
 * not allowed in a path. A target accepted here cannot address anything but the segments it shows.
 */
export function parseGraphTarget(target: string): GraphTarget | TargetRefusal {
  const mark = target.indexOf('?');
  const path = mark === -1 ? target : target.slice(0, mark);
  const query = mark === -1 ? '' : target.slice(mark + 1);
  const [version = '', ...rawSegments] = path.split('/');
  if (!GRAPH_VERSION.test(version)) return refusePath(`"${version.slice(0, 32)}" is not a provider API version such as v24.0.`);
  if (rawSegments.length === 0) return refusePath('The path must name a node after the version.');
  const segments: string[] = [];
  for (const raw of rawSegments) {
    if (raw === '') return refusePath('The path may not contain empty segments (`//` or a trailing `/`).');
    if (!SEGMENT.test(raw)) return refusePath('The path holds characters that are not allowed in a URL path.');
    let decoded: string;
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      return refusePath('The path holds a percent-escape that is not UTF-8.');
    }
    if (decoded === '.' || decoded === '..') return refusePath('The path may not contain `.` or `..` segments.');
    if (decoded.includes('/') || decoded.includes('\\')) return refusePath('The path may not contain an encoded `/` or `\\`.');
    if (CONTROL.test(decoded)) return refusePath('The path may not contain control characters.');
    segments.push(decoded);
  }
  if (!QUERY.test(query)) return { refused: 'query', parameter: '', message: 'The query string holds characters that are not allowed in a URL.' };
  for (const name of new URLSearchParams(query).keys()) {
    // `access_token[]=…` is read as the same parameter by the provider's PHP-style parser.
    const base = name.replace(/\[.*$/, '').toLowerCase();
    if ((CREDENTIAL_QUERY_PARAMETERS as readonly string[]).includes(base)) {
      return {
        refused: 'query',
        parameter: name,
        message: `The runtime sends the connection's own credentials; remove ${name} from the query.`,
      };
    }
  }
  return { version, segments, rawSegments, query };
}

/** The largest body accepted for a request of this content type: media uploads are multipart. */
export function bodyLimitFor(contentType: string | undefined): number {
  return contentType?.trim().toLowerCase().startsWith('multipart/form-data') ? MAX_UPLOAD_BYTES : MAX_BODY_BYTES;
}

/** Whether the call posts to a number's `/messages`, which counts against its throughput (§8.1). */
export function isSend(method: RelayMethod, target: GraphTarget, phoneNumberId: string): boolean {
  return method === 'POST' && target.segments.length === 2 && target.segments[0] === phoneNumberId && target.segments[1] === 'messages';
}

/** The caller's body grew past the limit while it was being relayed; the provider's request was aborted. */
export class RelayBodyTooLargeError extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`The body is larger than ${maxBytes} bytes.`);
    this.name = 'RelayBodyTooLargeError';
    this.maxBytes = maxBytes;
  }
}

/** The caller stopped sending its body for longer than the relay waits; the provider's request was aborted. */
export class RelayUploadStalledError extends Error {
  readonly idleMs: number;
  constructor(idleMs: number) {
    super(`The body stopped arriving for more than ${idleMs} ms.`);
    this.name = 'RelayUploadStalledError';
    this.idleMs = idleMs;
  }
}

export interface RelayRequest {
  method: RelayMethod;
  target: GraphTarget;
  accessToken: string;
  /** The caller's headers; only REQUEST_HEADERS are used, and `content-length` when a body is sent. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The caller's body, streamed through unread; omitted for none. */
  body?: AsyncIterable<Uint8Array> | undefined;
  /** Past this many bytes the body is refused (RelayBodyTooLargeError). */
  maxBodyBytes: number;
}

export interface RelayAnswer {
  status: number;
  /** The relayed headers (ANSWER_HEADERS), and a Retry-After when the answer is a throttle. */
  headers: Record<string, string | string[]>;
  /** The provider's bytes, unchanged. */
  body: Buffer;
  /** Set when the answer is the provider's error envelope: its code and category (an expired token, say). */
  failure: ProviderError | undefined;
}

export interface RelayOptions {
  /** `https://graph.facebook.com`, or the sandbox's `/graph` root; no version. Read per call. */
  baseUrl: () => string;
  /** Set when the app requires `appsecret_proof` on token-bearing calls. */
  appSecretProof?: { appSecret: string } | undefined;
  /**
   * Connecting, the answer's headers once the body is sent, the answer's body, and each pause in the
   * caller's upload each get at most this long (default 10 s, as the adapter).
   */
  timeoutMs?: number;
  maxAnswerBytes?: number;
}

function timedOut(): ProviderError {
  return new ProviderError({ category: 'timeout', retryable: true, message: 'The provider did not answer in time.' });
}

/** The first value of a header the provider may repeat, as a plain string. */
function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Passes the caller's body through, counting: past `maxBytes` it fails, and so does a pause longer
 * than `idleMs` (a stalled client must not hold a provider connection open). `onEnd` marks the moment
 * the provider has everything, from which its answer is timed.
 */
async function* metered(source: AsyncIterable<Uint8Array>, maxBytes: number, idleMs: number, onEnd: () => void): AsyncGenerator<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  let received = 0;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new RelayUploadStalledError(idleMs)), idleMs);
    });
    let next: IteratorResult<Uint8Array>;
    try {
      next = await Promise.race([iterator.next(), stalled]);
    } finally {
      clearTimeout(timer);
    }
    if (next.done) break;
    received += next.value.byteLength;
    if (received > maxBytes) throw new RelayBodyTooLargeError(maxBytes);
    yield next.value;
  }
  onEnd();
}

export function createGraphRelay(options: RelayOptions) {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  // Its own keep-alive pool: relayed calls must not queue behind (or hold up) the adapter's.
  // Waiting for the answer's headers is timed here, from the end of the upload, not by undici,
  // whose headers timer would run during a slow caller's upload.
  const agent = new Agent({ keepAliveTimeout: 30_000, connectTimeout: timeoutMs, headersTimeout: 0, bodyTimeout: timeoutMs });

  // The base URL is read per call (the sandbox's is known only once the server listens) but parsed once.
  let base: { text: string; origin: string; path: string } | undefined;
  function baseOf(): { origin: string; path: string } {
    const text = options.baseUrl();
    if (base?.text !== text) {
      const url = new URL(text);
      base = { text, origin: url.origin, path: url.pathname.replace(/\/+$/, '') };
    }
    return base;
  }

  /** The provider URL's origin and path, checked to stay below the version root. */
  function locate(target: GraphTarget, token: string): { origin: string; path: string } {
    const { origin, path: basePath } = baseOf();
    const root = `${basePath}/${target.version}/`;
    const path = `${root}${target.rawSegments.join('/')}`;
    // parseGraphTarget already refuses what a URL parser would normalise; this holds the line should
    // that ever change: the path the provider will resolve must be the path built, under the root.
    const resolved = new URL(path, origin).pathname;
    if (resolved !== path || !resolved.startsWith(root)) throw new RangeError(`the relayed path ${path} does not stay below ${root}`);
    let query = target.query;
    if (options.appSecretProof) {
      const proof = createHmac('sha256', options.appSecretProof.appSecret).update(token).digest('hex');
      query = `${query === '' ? '' : `${query}&`}appsecret_proof=${proof}`;
    }
    return { origin, path: query === '' ? path : `${path}?${query}` };
  }

  function requestHeaders(request: RelayRequest, withBody: boolean): Record<string, string> {
    const headers: Record<string, string> = { authorization: `Bearer ${request.accessToken}` };
    for (const name of REQUEST_HEADERS) {
      const value = single(request.headers[name]);
      if (value !== undefined) headers[name] = value;
    }
    const length = single(request.headers['content-length']);
    if (withBody && length !== undefined) headers['content-length'] = length;
    return headers;
  }

  /**
   * Sends the request and reads the provider's answer. Throws a ProviderError only when there is no
   * answer to relay (`timeout`: none in time; `unavailable`: the connection failed or closed, or the
   * answer broke off or was too large), and the Relay*Error classes for a faulty upload. Any answer,
   * whatever its status or content, is returned as it came.
   */
  async function relay(request: RelayRequest): Promise<RelayAnswer> {
    assertNoRequestTransaction('the provider');
    const { origin, path } = locate(request.target, request.accessToken);
    const controller = new AbortController();
    let deadline: NodeJS.Timeout | undefined;
    const startClock = () => {
      clearTimeout(deadline);
      deadline = setTimeout(() => controller.abort(timedOut()), timeoutMs);
    };
    const body = request.body === undefined ? undefined : Readable.from(metered(request.body, request.maxBodyBytes, timeoutMs, startClock));
    if (body === undefined) startClock();

    try {
      let response: Awaited<ReturnType<Agent['request']>>;
      try {
        response = await agent.request({
          origin,
          path,
          method: request.method,
          headers: requestHeaders(request, body !== undefined),
          body: body ?? null,
          signal: controller.signal,
        });
      } catch (error) {
        if (error instanceof RelayBodyTooLargeError || error instanceof RelayUploadStalledError) throw error;
        throw transportFailure(error);
      }
      // The answer's body gets its own allowance, counted from its headers.
      startClock();
      const declared = Number(single(response.headers['content-length']) ?? 0);
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        if (declared > maxAnswerBytes) throw new RangeError('declared too large');
        for await (const chunk of response.body as AsyncIterable<Buffer>) {
          size += chunk.byteLength;
          if (size > maxAnswerBytes) throw new RangeError('too large');
          chunks.push(chunk);
        }
      } catch (error) {
        response.body.on('error', () => undefined);
        response.body.destroy();
        if (error instanceof RangeError) {
          throw new ProviderError({
            category: 'unavailable',
            retryable: false,
            message: `The provider's answer is larger than the ${maxAnswerBytes} bytes the runtime relays.`,
            httpStatus: response.statusCode,
            traceId: headerValue(response.headers, 'x-fb-trace-id'),
          });
        }
        // Half an answer is no answer: nothing of it is relayed.
        throw transportFailure(error);
      }
      return answerOf(response.statusCode, response.headers, Buffer.concat(chunks, size));
    } finally {
      clearTimeout(deadline);
    }
  }

  return { relay, close: () => agent.close() };
}

/**
 * The answer as relayed. An error envelope is read for its code (an expired token is for the caller
 * to learn and for the connection to record); the bytes stay as they came. A throttle (HTTP 429, or
 * a rate-limit code on the provider's usual 400) and a 503 get a Retry-After: the provider's own
 * estimate from its usage headers when it sent one, else the wait documented for the code, else one
 * second (graph-errors.ts).
 */
export function answerOf(status: number, rawHeaders: Record<string, string | string[] | undefined>, body: Buffer): RelayAnswer {
  const headers: Record<string, string | string[]> = {};
  for (const name of ANSWER_HEADERS) {
    const value = rawHeaders[name];
    if (value !== undefined) headers[name] = value;
  }
  if (status < 400) return { status, headers, body, failure: undefined };
  const parsed = parseJson(body);
  const failure = graphFailure(status, parsed, rawHeaders);
  if (status === 429 || status === 503 || failure.category === 'throttled') {
    headers['retry-after'] = String(Math.max(1, failure.retryAfterSeconds ?? 1));
  }
  // Only the provider's own envelope says what went wrong; a proxy's 401 page is no verdict on the token.
  return { status, headers, body, failure: parseGraphError(parsed) === undefined ? undefined : failure };
}

export type GraphRelay = ReturnType<typeof createGraphRelay>;
