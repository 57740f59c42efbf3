import { ProviderError, type ProviderErrorCategory } from '../provider.ts';
import { asObject, asString } from './json.ts';

/**
 * How the provider's Graph error codes map onto the port's categories, retry classes and waits
 * (cloud-api-facts.md §8.3 and §8.4). Kept apart from the HTTP code so the table reads on its own.
 */

/** The token is expired, invalid or revoked (§8.3 "refresh token"). */
const AUTH_CODES: ReadonlySet<number> = new Set([0, 190]);

/** Rate limits: app (4), WABA (80007), throughput (130429), business↔user pair (131056). */
const THROTTLE_CODES: ReadonlySet<number> = new Set([4, 80007, 130429, 131056]);

/** Temporary provider failures in the "retry with backoff" class, whatever HTTP status carries them. */
const UNAVAILABLE_CODES: ReadonlySet<number> = new Set([2, 131000, 131016, 131057, 133004]);

/** Waits the provider's documentation suggests for codes whose headers give no estimate (§8.4). */
const DEFAULT_WAIT_SECONDS: Readonly<Record<number, number>> = {
  // The throughput budget is per second.
  130429: 1,
  // About one message per six seconds per user pair.
  131056: 6,
  // A throughput upgrade takes up to a minute.
  131057: 60,
  // Hourly budgets without an estimate: a minute is the first step of the backoff the caller grows.
  4: 60,
  80007: 60,
};

export interface GraphErrorFields {
  code: number | undefined;
  subcode: number | undefined;
  message: string;
  details: string | undefined;
  traceId: string | undefined;
}

function asInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

/** Reads the `{ error: { code, error_subcode, message, error_data.details, fbtrace_id } }` envelope (§8.2). */
export function parseGraphError(body: unknown): GraphErrorFields | undefined {
  const error = asObject(asObject(body)?.error);
  if (error === undefined) return undefined;
  return {
    code: asInteger(error.code),
    subcode: asInteger(error.error_subcode),
    message: asString(error.message) ?? 'The provider refused the request.',
    details: asString(asObject(error.error_data)?.details),
    traceId: asString(error.fbtrace_id),
  };
}

export function categorise(code: number | undefined, httpStatus: number): { category: ProviderErrorCategory; retryable: boolean } {
  if (code !== undefined && AUTH_CODES.has(code)) return { category: 'auth', retryable: false };
  if (code === undefined && httpStatus === 401) return { category: 'auth', retryable: false };
  if ((code !== undefined && THROTTLE_CODES.has(code)) || httpStatus === 429) return { category: 'throttled', retryable: true };
  if (code !== undefined && UNAVAILABLE_CODES.has(code)) return { category: 'unavailable', retryable: true };
  // Code 1 ("API unknown") is in the retry class only when the provider itself failed: on a 4xx it is
  // also how Graph refuses a wrong client secret, which no retry can fix.
  if (httpStatus >= 500) return { category: 'unavailable', retryable: true };
  return { category: 'rejected', retryable: false };
}

/** The largest `estimated_time_to_regain_access` (minutes) in a usage header, if any is positive. */
function regainMinutes(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(header);
  } catch {
    return undefined;
  }
  let best: number | undefined;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      value.forEach(visit);
      return;
    }
    const object = asObject(value);
    if (object === undefined) return;
    const minutes = object.estimated_time_to_regain_access;
    if (typeof minutes === 'number' && Number.isFinite(minutes) && minutes > 0) best = Math.max(best ?? 0, minutes);
    // x-business-use-case-usage nests entries under each account id; x-app-usage is flat.
    Object.values(object).forEach((inner) => {
      if (typeof inner === 'object') visit(inner);
    });
  };
  visit(parsed);
  return best;
}

function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Seconds to wait before retrying (§8.4): the provider's own estimate from its usage headers wins,
 * then a standard Retry-After header (Graph is not known to send one, but a proxy might), then the
 * documented wait for the code. Undefined leaves the delay to the caller's exponential backoff.
 */
export function retryAfterSeconds(
  code: number | undefined,
  category: ProviderErrorCategory,
  headers: Record<string, string | string[] | undefined>,
): number | undefined {
  if (category !== 'throttled' && category !== 'unavailable') return undefined;
  const minutes = Math.max(regainMinutes(headerValue(headers, 'x-business-use-case-usage')) ?? 0, regainMinutes(headerValue(headers, 'x-app-usage')) ?? 0);
  if (minutes > 0) return Math.ceil(minutes * 60);
  const retryAfter = headerValue(headers, 'retry-after');
  if (retryAfter !== undefined && /^\d+$/.test(retryAfter.trim())) return Math.max(1, Number(retryAfter.trim()));
  if (code !== undefined && DEFAULT_WAIT_SECONDS[code] !== undefined) return DEFAULT_WAIT_SECONDS[code];
  return category === 'throttled' ? 1 : undefined;
}

/** A ProviderError from a Graph answer with a non-2xx status. */
export function graphFailure(httpStatus: number, body: unknown, headers: Record<string, string | string[] | undefined>): ProviderError {
  const fields = parseGraphError(body);
  const code = fields?.code;
  const { category, retryable } = categorise(code, httpStatus);
  const traceId = fields?.traceId ?? headerValue(headers, 'x-fb-trace-id');
  const message =
    fields === undefined
      ? `The provider answered HTTP ${httpStatus} without an error envelope.`
      : fields.details === undefined
        ? fields.message
        : `${fields.message}: ${fields.details}`;
  return new ProviderError({
    category,
    retryable,
    message,
    code,
    subcode: fields?.subcode,
    traceId,
    httpStatus,
    retryAfterSeconds: retryAfterSeconds(code, category, headers),
  });
}
