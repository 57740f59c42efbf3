/**
 * The client: every /v1 operation over the platform's `fetch`, with the service's own rules built in.
 * - Each side-effecting POST carries an Idempotency-Key (the caller's, or one made here), the same on
 *   every retry of the call, so the server acts once and replays its answer (docs/idempotency.md).
 * - A call is retried after a lost connection, a 429, a 503 or an answer the envelope marks
 *   `retryable` (exactly the answers the server never stores under a key), waiting as `Retry-After`
 *   says, or else backing off exponentially with jitter; never a POST that has no key.
 * - Lists are walked by their cursors (`Paginator`); errors are typed (`ApiError`).
 */
import { ApiConnectionError, ApiError, ApiTimeoutError, isErrorBody, UnexpectedResponseError } from './errors.ts';
import { OPERATIONS, RESOURCES } from './generated/operations.ts';
import { Paginator } from './pagination.ts';
import type { Answer, CallOptions, FileUpload, Item, ListOperationKey, OperationKey, Page, RequestInput, Resources } from './types.ts';

export type CredentialKind = 'organization_key' | 'connection_key' | 'dashboard_token' | 'oauth_token';

export interface ClientOptions {
  /** An API key (`cok_…`, `csk_…`), or a dashboard or OAuth access token (`dtk_…`, `oat_…`). */
  apiKey: string;
  /** Where the service answers, e.g. `https://api.example.com` (its PUBLIC_BASE_URL). */
  baseUrl: string;
  /** The mode the key must have: a key of the other mode (or a token, which has none) is refused here, before any request. */
  mode?: 'live' | 'test';
  /** Retries per call after a 429, a 503, a retryable error or a lost connection. Default 2. */
  maxRetries?: number;
  /** Milliseconds a call may take, retries and waits included. Default 60,000. */
  timeout?: number;
  /** The longest `Retry-After` the client waits for, in milliseconds; a longer one is thrown at once. Default 60,000. */
  maxRetryAfter?: number;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /** How the client waits between attempts; tests pass one that does not really sleep. It must reject when `signal` aborts. */
  sleep?: (milliseconds: number, signal: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the backoff's jitter. Defaults to `Math.random`. */
  random?: () => number;
}

/** Backoff without Retry-After: 0.5 s, 1 s, 2 s, … up to 8 s, each scaled by a random factor in [0.5, 1). */
const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 8_000;

const CREDENTIAL_PATTERN = /^(cok|csk)_(live|test)_[0-9A-Za-z]+$|^(dtk|oat)_[0-9A-Za-z_-]+$/;
const KINDS: Record<string, CredentialKind> = { cok: 'organization_key', csk: 'connection_key', dtk: 'dashboard_token', oat: 'oauth_token' };

/** What a credential's prefix says (docs/authentication.md#credentials): its kind, and for keys their mode. */
export function describeCredential(credential: string): { kind: CredentialKind; mode: 'live' | 'test' | null } {
  const match = CREDENTIAL_PATTERN.exec(credential);
  if (!match) throw new TypeError('apiKey is not a credential of this service (cok_…, csk_…, dtk_… or oat_…)');
  const prefix = match[1] ?? match[3]!;
  return { kind: KINDS[prefix]!, mode: (match[2] as 'live' | 'test' | undefined) ?? null };
}

function defaultSleep(milliseconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, milliseconds);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** `Retry-After` in milliseconds: whole seconds, or an HTTP date. */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function queryString(query: Record<string, unknown> | undefined): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? (value as unknown[]) : [value]) search.append(name, String(item));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

function formData(upload: FileUpload): FormData {
  const form = new FormData();
  // The file goes last: the server reads the fields before it (docs/media.md).
  if (upload.type !== undefined) form.append('type', upload.type);
  if (upload.metadata !== undefined) form.append('metadata', JSON.stringify(upload.metadata));
  const name = upload.filename ?? (upload.file as Blob & { name?: string }).name ?? 'upload';
  form.append('file', upload.file, name);
  return form;
}

type AnyInput = { path?: Record<string, unknown>; query?: Record<string, unknown>; body?: unknown } & CallOptions;

export type Client = Resources & {
  /** The credential's kind, from its prefix. */
  readonly credentialKind: CredentialKind;
  /** `test` or `live` for an API key; null for a dashboard or OAuth token, which have no mode. */
  readonly mode: 'live' | 'test' | null;
  /** Any operation by its key, `client.request('POST /v1/messages', { body })`; a list answers its one page. */
  request<K extends OperationKey>(
    key: K,
    ...input: Record<string, never> extends RequestInput<K> ? [input?: RequestInput<K>] : [input: RequestInput<K>]
  ): Promise<Answer<K>>;
  /** Every page of a list operation, walked by its cursors. */
  paginate<K extends ListOperationKey>(
    key: K,
    ...input: Record<string, never> extends RequestInput<K> ? [input?: RequestInput<K>] : [input: RequestInput<K>]
  ): Paginator<Item<K>, Answer<K> & Page<Item<K>>>;
};

export function createClient(options: ClientOptions): Client {
  const credential = describeCredential(options.apiKey);
  if (options.mode !== undefined && credential.mode !== options.mode) {
    throw new TypeError(
      `the client was asked for ${options.mode} mode, but this credential is ${credential.mode ?? `a ${credential.kind}, which has no mode`}`,
    );
  }
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  const sleep = options.sleep ?? defaultSleep;
  const random = options.random ?? Math.random;
  const clientMaxRetries = options.maxRetries ?? 2;
  const clientTimeout = options.timeout ?? 60_000;
  const maxRetryAfter = options.maxRetryAfter ?? 60_000;

  function url(key: OperationKey, path: Record<string, unknown> | undefined, query: Record<string, unknown> | undefined): string {
    const template = key.slice(key.indexOf(' ') + 1);
    const filled = template.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = path?.[name];
      if ((typeof value !== 'string' && typeof value !== 'number') || value === '') throw new TypeError(`${key} needs the path parameter ${name}`);
      return encodeURIComponent(value);
    });
    return baseUrl + filled + queryString(query);
  }

  async function call(key: OperationKey, input: AnyInput): Promise<unknown> {
    const operation = OPERATIONS[key];
    const method = key.slice(0, key.indexOf(' '));
    const target = url(key, input.path, input.query);
    const headers: Record<string, string> = { accept: operation.accept, ...input.headers, authorization: `Bearer ${options.apiKey}` };
    const idempotencyKey = input.idempotencyKey ?? (operation.idempotencyKey ? globalThis.crypto.randomUUID() : undefined);
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    let body: string | FormData | undefined;
    if (operation.input === 'multipart') body = formData(input.body as FileUpload);
    else if (operation.input === 'json') {
      body = JSON.stringify(input.body ?? {});
      headers['content-type'] = 'application/json';
    }
    const maxRetries = operation.retry ? (input.maxRetries ?? clientMaxRetries) : 0;
    const timeout = input.timeout ?? clientTimeout;
    const deadline = Date.now() + timeout;

    // One signal for the whole call: the caller's, or the call's own time running out.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new ApiTimeoutError(`${key} did not complete within ${timeout} ms`)), timeout);
    const forward = () => controller.abort(input.signal?.reason);
    if (input.signal?.aborted) forward();
    input.signal?.addEventListener('abort', forward, { once: true });
    const signal = controller.signal;
    let handedOver = false;
    try {
      for (let attempt = 0; ; attempt++) {
        const canRetry = attempt < maxRetries;
        const backoff = () => Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS * 2 ** attempt) * (0.5 + random() * 0.5);
        let response: Response;
        let text: string;
        try {
          response = await fetchImpl(target, { method, headers, body, signal });
          // A file or a stream is read by the caller, for as long as it takes: the call's time ends here.
          // So is a download's 304 (its `If-None-Match` ETag is current), which is no error.
          if ((response.ok || response.status === 304) && operation.response === 'raw') {
            handedOver = true;
            clearTimeout(timer);
            return response;
          }
          text = await response.text();
        } catch (error) {
          if (signal.aborted) throw signal.reason;
          if (!canRetry) throw new ApiConnectionError(`${key}: the service could not be reached`, { cause: error });
          await sleep(backoff(), signal);
          continue;
        }
        if (response.ok) {
          if (text === '') return undefined;
          try {
            return JSON.parse(text) as unknown;
          } catch {
            throw new UnexpectedResponseError(response.status, text, response.headers);
          }
        }
        let envelope: unknown;
        try {
          envelope = (JSON.parse(text) as { error?: unknown }).error;
        } catch {
          envelope = undefined;
        }
        const error = isErrorBody(envelope)
          ? new ApiError(response.status, envelope, response.headers)
          : new UnexpectedResponseError(response.status, text, response.headers);
        const worthRetrying = response.status === 429 || response.status === 503 || (error instanceof ApiError && error.retryable);
        if (!worthRetrying || !canRetry) throw error;
        const wait = retryAfterMs(response.headers.get('retry-after')) ?? backoff();
        // Waiting longer than allowed, or past the call's own deadline, would only end in a time-out.
        if (wait > maxRetryAfter || Date.now() + wait > deadline) throw error;
        await sleep(wait, signal);
      }
    } finally {
      if (!handedOver) clearTimeout(timer);
      input.signal?.removeEventListener('abort', forward);
    }
  }

  function requestInput(key: OperationKey, args: unknown[]): AnyInput {
    const names = [...key.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
    const path = Object.fromEntries(names.map((name, index) => [name, args[index]]));
    const rest = args.slice(names.length);
    const kind = OPERATIONS[key].input;
    const input = kind === 'none' ? undefined : rest.shift();
    const callOptions = (rest.shift() ?? {}) as CallOptions;
    return {
      ...callOptions,
      path,
      ...(kind === 'query' ? { query: input as Record<string, unknown> | undefined } : { body: input }),
    };
  }

  function paginator(key: ListOperationKey, input: AnyInput) {
    const { list } = OPERATIONS[key];
    return new Paginator((query) => call(key, { ...input, query }) as Promise<Page<unknown>>, input.query ?? {}, list);
  }

  function bind(tree: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(
      Object.entries(tree).map(([name, value]): [string, unknown] => {
        if (typeof value !== 'string') return [name, bind(value as Record<string, unknown>)];
        const key = value as OperationKey;
        const method =
          OPERATIONS[key].list !== null
            ? (...args: unknown[]) => paginator(key as ListOperationKey, requestInput(key, args))
            : (...args: unknown[]) => call(key, requestInput(key, args));
        return [name, method];
      }),
    );
  }

  return {
    ...(bind(RESOURCES) as Resources),
    credentialKind: credential.kind,
    mode: credential.mode,
    request: (key: OperationKey, input: AnyInput = {}) => call(key, input),
    paginate: (key: ListOperationKey, input: AnyInput = {}) => paginator(key, input),
  } as unknown as Client;
}
