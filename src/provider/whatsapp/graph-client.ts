import { createHmac } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Agent, errors as undiciErrors, request, type FormData } from 'undici';
import { assertNoRequestTransaction } from '../../lib/transaction-scope.ts';
import { ProviderError } from '../provider.ts';
import { graphFailure } from './graph-errors.ts';
import { asObject, type Json } from './json.ts';

/**
 * The HTTP side of the cloud adapter: one keep-alive pool, time limits, `appsecret_proof`, and the
 * translation of every transport fault and Graph error into a `ProviderError`. It knows no endpoint.
 */

export interface GraphClientOptions {
  /** `https://graph.facebook.com`, or the sandbox's `/graph` root. No trailing version. */
  baseUrl: string;
  version: string;
  appSecret: string;
  appSecretProof: boolean;
  timeoutMs: number;
}

export type Query = Record<string, string>;

export interface GraphAnswer {
  status: number;
  body: Json;
  traceId: string | undefined;
}

export interface CallInit {
  token?: string;
  query?: Query;
  /** Sent as JSON. */
  body?: Json;
  /** Sent as multipart/form-data (media upload). */
  form?: FormData;
  /** Caps the whole call; defaults to twice `timeoutMs`. */
  totalTimeoutMs?: number;
}

export interface BinaryAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

/** Drops an unread body and its connection. undici reports that as an abort error, which no one waits for. */
export function discardBody(body: Readable): void {
  body.on('error', () => undefined);
  body.destroy();
}

export function unexpectedAnswer(what: string, httpStatus: number, traceId: string | undefined): ProviderError {
  return new ProviderError({ category: 'unavailable', retryable: true, message: `The provider's answer lacked ${what}.`, httpStatus, traceId });
}

/** A transport failure (no HTTP answer at all, or a body cut short) as the port sees it. */
export function transportFailure(error: unknown): ProviderError {
  if (error instanceof ProviderError) return error;
  const timedOut =
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError ||
    error instanceof undiciErrors.ConnectTimeoutError ||
    (error instanceof Error && error.name === 'TimeoutError');
  if (timedOut) return new ProviderError({ category: 'timeout', retryable: true, message: 'The provider did not answer in time.', cause: error });
  const reason = error instanceof Error ? error.message : String(error);
  return new ProviderError({ category: 'unavailable', retryable: true, message: `The provider could not be reached: ${reason}`, cause: error });
}

export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function createGraphClient(options: GraphClientOptions) {
  const { timeoutMs } = options;
  const base = new URL(options.baseUrl);
  const root = `${options.baseUrl.replace(/\/+$/, '')}/${options.version}`;
  // One pool for every connection's calls: the provider is one host, and TLS set-up dominates latency.
  const agent = new Agent({ keepAliveTimeout: 30_000, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });

  function proof(accessToken: string): Query {
    return options.appSecretProof ? { appsecret_proof: createHmac('sha256', options.appSecret).update(accessToken).digest('hex') } : {};
  }

  async function call(method: 'GET' | 'POST' | 'DELETE', path: string, init: CallInit = {}): Promise<GraphAnswer> {
    assertNoRequestTransaction('the provider');
    const url = new URL(`${root}/${path}`);
    const query = { ...init.query, ...(init.token === undefined ? {} : proof(init.token)) };
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    // undici sets the multipart content-type (with its boundary) itself for a FormData body.
    const body = init.form ?? (init.body === undefined ? undefined : JSON.stringify(init.body));

    let response: Awaited<ReturnType<typeof request>>;
    let text: string;
    try {
      response = await request(url, {
        method,
        headers,
        dispatcher: agent,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        // The per-phase time-outs above could add up; this caps the whole call.
        signal: AbortSignal.timeout(init.totalTimeoutMs ?? timeoutMs * 2),
        ...(body === undefined ? {} : { body }),
      });
      text = await response.body.text();
    } catch (error) {
      throw transportFailure(error);
    }

    const traceId = headerValue(response.headers, 'x-fb-trace-id');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      // A proxy's HTML error page or a truncated answer: the provider failed, whatever the status says.
      throw new ProviderError({
        category: 'unavailable',
        retryable: true,
        message: `The provider answered HTTP ${response.statusCode} with a body that is not JSON.`,
        httpStatus: response.statusCode,
        traceId,
        cause: error,
      });
    }
    if (response.statusCode < 200 || response.statusCode >= 300) throw graphFailure(response.statusCode, parsed, response.headers);
    const object = asObject(parsed);
    if (object === undefined) throw unexpectedAnswer('a JSON object', response.statusCode, traceId);
    return { status: response.statusCode, body: object, traceId };
  }

  /**
   * GETs a media URL the provider handed out, with the token. The body is returned unread for the
   * caller to stream: there is no cap on the whole call (a large document on a slow link may take
   * minutes), only on connecting, on the headers, and on each pause between chunks.
   */
  async function fetchBinary(target: string, token: string): Promise<BinaryAnswer> {
    assertNoRequestTransaction('the provider');
    let url: URL;
    try {
      url = new URL(target);
    } catch (error) {
      throw new ProviderError({ category: 'unavailable', retryable: true, message: 'The provider gave a media URL that is not a URL.', cause: error });
    }
    // The token travels in the clear over http, so only the provider's own (sandbox) origin may use it.
    if (url.protocol !== 'https:' && url.origin !== base.origin) {
      throw new ProviderError({ category: 'unavailable', retryable: true, message: `The provider gave a media URL that is not https: ${url.origin}.` });
    }
    try {
      const response = await request(url, {
        method: 'GET',
        headers: { authorization: `Bearer ${token}` },
        dispatcher: agent,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      if (response.statusCode >= 200 && response.statusCode < 300) {
        return { status: response.statusCode, headers: response.headers, body: response.body };
      }
      const text = await response.body.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      throw graphFailure(response.statusCode, parsed, response.headers);
    } catch (error) {
      throw transportFailure(error);
    }
  }

  return { call, fetchBinary, close: () => agent.close() };
}

export type GraphClient = ReturnType<typeof createGraphClient>;
