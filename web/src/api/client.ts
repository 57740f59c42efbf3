import type { ErrorBody, ListPage } from './types.ts';

/** An error answer from the API, with everything the envelope says. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: ErrorBody;

  constructor(status: number, body: ErrorBody) {
    super(body.message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }

  get code(): string {
    return this.body.code;
  }
}

/** The connection failed or the answer was not the API's JSON: shown as such, never as an API error. */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  /** A side-effecting POST gets one generated unless given: a retried click never acts twice. */
  idempotencyKey?: string;
  /** A POST that computes and stores nothing (a preview): no Idempotency-Key, so no answer is kept. */
  readOnly?: boolean;
  signal?: AbortSignal;
  /** Sign-in and refresh themselves: no bearer, no retry on 401. */
  anonymous?: boolean;
}

/** Where the dashboard gets its bearer token, and how it renews it once a request is refused. */
export interface TokenSource {
  current(): string | null;
  /** Renews the token (the refresh cookie) and returns it; null when the session is over. */
  renew(stale: string): Promise<string | null>;
}

function url(path: string, query: RequestOptions['query']): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const qs = search.toString();
  return qs ? `${path}?${qs}` : path;
}

async function parse(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new NetworkError(`The server answered ${response.status} with a body that is not JSON.`);
  }
}

/**
 * The dashboard's one way to call the API: same origin, JSON in and out, the bearer token from the
 * session, a single retry after a silent token renewal, and the error envelope as an ApiError.
 */
export function createApiClient(tokens: TokenSource) {
  async function send(method: string, path: string, options: RequestOptions, bearer: string | null): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (bearer && !options.anonymous) headers.authorization = `Bearer ${bearer}`;
    let body: BodyInit | undefined;
    if (options.body instanceof FormData) body = options.body;
    else if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    try {
      return await fetch(url(path, options.query), { method, headers, body, signal: options.signal, credentials: 'same-origin' });
    } catch (error) {
      if (error instanceof DOMException && error.name === 'AbortError') throw error;
      throw new NetworkError('The service could not be reached. Check your connection and try again.');
    }
  }

  async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    // The same key across the renewal retry: the first attempt was refused before doing anything.
    const generated = method === 'POST' && !options.anonymous && !options.readOnly ? crypto.randomUUID() : undefined;
    const sent = { ...options, idempotencyKey: options.idempotencyKey ?? generated };
    const bearer = tokens.current();
    let response = await send(method, path, sent, bearer);
    if (response.status === 401 && !options.anonymous && bearer) {
      const renewed = await tokens.renew(bearer);
      if (renewed) response = await send(method, path, sent, renewed);
    }
    const payload = await parse(response);
    if (!response.ok) {
      const error = (payload as { error?: ErrorBody } | undefined)?.error;
      if (!error) throw new NetworkError(`The server answered ${response.status}.`);
      throw new ApiError(response.status, error);
    }
    return payload as T;
  }

  return {
    request,
    get: <T>(path: string, options?: RequestOptions) => request<T>('GET', path, options),
    /**
     * Every item of a list, following the cursors page by page: for the short lists a form offers
     * whole (members, connections, a number's templates), never for an unbounded one.
     */
    async all<T>(path: string, query: RequestOptions['query'] = {}): Promise<T[]> {
      const items: T[] = [];
      let after: string | undefined;
      do {
        const page = await request<ListPage<T>>('GET', path, { query: { limit: 100, ...query, after } });
        items.push(...page.data);
        after = page.has_more && page.next_cursor ? page.next_cursor : undefined;
      } while (after);
      return items;
    },
    post: <T>(path: string, body?: unknown, options?: RequestOptions) => request<T>('POST', path, { ...options, body }),
    patch: <T>(path: string, body: unknown, options?: RequestOptions) => request<T>('PATCH', path, { ...options, body }),
    delete: <T>(path: string, options?: RequestOptions) => request<T>('DELETE', path, options),
    /** For a long-lived answer (the event stream): the raw response, with the current bearer. */
    async open(path: string, options: { headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Response> {
      const bearer = tokens.current();
      return fetch(path, { headers: { ...options.headers, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) }, signal: options.signal });
    },
  };
}

export type ApiClient = ReturnType<typeof createApiClient>;
