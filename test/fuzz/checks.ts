/**
 * What must hold for every answer, whatever was sent: no 5xx, a request id, every error in its
 * envelope, and the rate-limit headers wherever a bucket governs the route.
 */
import { ERROR_CODES, type ErrorCode } from '../../src/lib/errors.ts';
import type { Operation } from './operations.ts';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * Whose conventions an operation answers by. The sandbox is the stand-in provider: its Graph API
 * answers in the provider's envelope, its control API in its own small one (docs/sandbox.md). The
 * runtime relays the provider's answers as they came, marked by the provider's trace id.
 */
type Conventions = 'api' | 'relay' | 'sandbox-graph' | 'sandbox-control' | 'oauth';

function conventionsOf(operation: Operation): Conventions {
  if (operation.path.startsWith('/sandbox/graph/')) return 'sandbox-graph';
  if (operation.path.startsWith('/sandbox/')) return 'sandbox-control';
  if (operation.path.startsWith('/runtime/')) return 'relay';
  // The OAuth endpoints answer by OAuth's conventions (docs/oauth.md): RFC 6749 error bodies, or a page for the browser.
  if (operation.path.startsWith('/oauth/')) return 'oauth';
  return 'api';
}

const header = (answer: Answer, name: string) => {
  const value = answer.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The problems of our envelope `{error: {type, code, message, param, details, retryable, doc_url, request_id}}`, and its code. */
function envelopeProblems(answer: Answer, body: unknown): { problems: string[]; code: string | undefined } {
  const error = (body as { error?: Record<string, unknown> } | undefined)?.error;
  if (typeof error !== 'object' || error === null) return { problems: ['the error is not in the error envelope'], code: undefined };
  const problems: string[] = [];
  const code = typeof error.code === 'string' ? error.code : undefined;
  const catalogued = code !== undefined && Object.hasOwn(ERROR_CODES, code) ? ERROR_CODES[code as ErrorCode] : undefined;
  if (!catalogued) problems.push(`error.code ${JSON.stringify(error.code)} is not in the catalogue`);
  else {
    if (catalogued.status !== answer.status) problems.push(`status ${answer.status} is not ${code}'s ${catalogued.status}`);
    if (error.type !== catalogued.type) problems.push(`error.type ${JSON.stringify(error.type)} is not ${code}'s ${catalogued.type}`);
    if (error.retryable !== catalogued.retryable) problems.push(`error.retryable is not ${code}'s ${catalogued.retryable}`);
  }
  if (typeof error.message !== 'string' || error.message === '') problems.push('error.message is not a non-empty string');
  if (!('param' in error) || (error.param !== null && typeof error.param !== 'string')) problems.push('error.param is neither a string nor null');
  if (!Array.isArray(error.details)) problems.push('error.details is not an array');
  if (typeof error.doc_url !== 'string' || !error.doc_url.endsWith(`/docs/errors/${String(code)}`)) problems.push('error.doc_url is not the page of its code');
  // A replay (a key used before, with the same request) answers the stored body, whose request_id is
  // the first request's (docs/idempotency.md); its own X-Request-Id header is new.
  const replayed = header(answer, 'idempotency-replayed') === 'true';
  if (!replayed && error.request_id !== header(answer, 'x-request-id')) {
    problems.push(`error.request_id ${JSON.stringify(error.request_id)} is not the X-Request-Id header`);
  }
  if (!(header(answer, 'content-type') ?? '').startsWith('application/json')) problems.push('the error is not sent as application/json');
  return { problems, code };
}

function isOurEnvelope(body: unknown): boolean {
  const error = (body as { error?: { request_id?: unknown } } | undefined)?.error;
  return typeof error === 'object' && error !== null && typeof error.request_id === 'string';
}

/** An OAuth error body `{error, error_description?}` in JSON, or the authorization server's HTML page. */
function oauthProblems(answer: Answer, body: unknown): string[] {
  const type = header(answer, 'content-type') ?? '';
  if (type.startsWith('text/html')) return answer.text.includes('<h1>') ? [] : ['the error page is empty'];
  const error = (body as { error?: unknown; error_description?: unknown } | undefined)?.error;
  if (typeof error !== 'string' || !/^[a-z_]+$/.test(error)) return ['the error is in neither our envelope, an OAuth error body nor a page'];
  if (!type.startsWith('application/json')) return ['the OAuth error is not sent as application/json'];
  return [];
}

function providerProblems(conventions: Conventions, answer: Answer, body: unknown): string[] {
  const error = (body as { error?: Record<string, unknown> } | undefined)?.error;
  if (typeof error !== 'object' || error === null || typeof error.message !== 'string')
    return [`the error is in neither our envelope nor the ${conventions} one`];
  if (conventions === 'sandbox-control') return typeof error.code === 'string' ? [] : ['the control error has no code'];
  if (typeof error.code !== 'number') return ['the Graph error has no numeric code'];
  if (error.fbtrace_id !== header(answer, 'x-fb-trace-id')) return ['the Graph error’s fbtrace_id is not its x-fb-trace-id header'];
  return [];
}

/**
 * `502 provider_rejected` with the provider's own error: the catalogue's answer when the provider
 * refuses what the caller asked of it (a `phone_number_id` the account does not have), which the
 * fuzz's requests do on purpose. The provider, not the service, said no.
 */
function isProviderRefusal(answer: Answer): boolean {
  const error = (parse(answer.text) as { error?: { code?: unknown; provider?: { code?: unknown } } } | undefined)?.error;
  return answer.status === 502 && error?.code === 'provider_rejected' && typeof error.provider?.code === 'number';
}

const RATE_LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

/**
 * Every problem of one answer. `rateLimited` says whether a bucket governs the operation's route;
 * an unknown path (`route_not_found`, `method_not_allowed`) is charged to the caller's address, so
 * its answer carries the headers whatever route the request was meant for.
 */
export function answerProblems(operation: Operation, answer: Answer, rateLimited: boolean): string[] {
  const problems: string[] = [];
  if (answer.status >= 500 && !isProviderRefusal(answer))
    problems.push(`status ${answer.status}: nothing is faulty, so no answer may be a 5xx${answer.status === 503 ? ' (a 503 with Retry-After included)' : ''}`);
  if (answer.status === 429) problems.push('429: the fuzz server’s limits are meant to be out of reach, so a case was refused rather than checked');
  if (!/^req_[0-9A-HJKMNP-TV-Z]{26}$/.test(header(answer, 'x-request-id') ?? '')) problems.push('no X-Request-Id header');

  let code: string | undefined;
  if (answer.status >= 400) {
    const conventions = conventionsOf(operation);
    const body = parse(answer.text);
    if (conventions === 'api' || isOurEnvelope(body)) {
      const checked = envelopeProblems(answer, body);
      problems.push(...checked.problems);
      code = checked.code;
    } else if (conventions === 'oauth') {
      problems.push(...oauthProblems(answer, body));
    } else if (conventions === 'relay') {
      if (header(answer, 'x-fb-trace-id') === undefined) problems.push('the error is neither our envelope nor a relayed provider answer');
    } else {
      problems.push(...providerProblems(conventions, answer, body));
    }
  }

  if (rateLimited || code === 'route_not_found' || code === 'method_not_allowed') {
    const missing = RATE_LIMIT_HEADERS.filter((name) => !/^\d+$/.test(header(answer, name) ?? ''));
    if (missing.length > 0) problems.push(`no rate-limit headers (${missing.join(', ')})`);
  }
  return problems;
}
