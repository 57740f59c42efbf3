/**
 * Signing and verifying webhook deliveries (`Service-Signature: t=<unix>,v1=<hex>[,v1=<hex>]`).
 *
 * This file depends on nothing but node:crypto on purpose: it is built, alone, into the package
 * receivers depend on (packages/webhook-signature: plain JavaScript for Node 18 and later), or copied
 * whole, and the service signs with the very same code, so the two sides cannot drift apart.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Lowercase, as Node and most frameworks present incoming header names. */
export const SIGNATURE_HEADER = 'service-signature';
/** The spec's five minutes, in both directions, to absorb clock skew between sender and receiver. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const SCHEME = 'v1';
const HMAC_HEX_LENGTH = 64;
// Twelve digits reach the year 33658; anything longer is garbage, not a timestamp.
const TIMESTAMP_PATTERN = /^\d{1,12}$/;
const HEX_PATTERN = /^[0-9a-f]+$/i;

function hmac(secret: string, timestamp: number, rawBody: string | Uint8Array): Buffer {
  // The body is fed as its own bytes (never re-encoded through a string) so that what is signed is
  // exactly what travels on the wire.
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest();
}

/**
 * `t=<unix>,v1=<hex>[,v1=<hex>]`: one v1 per secret (two during a rotation), HMAC-SHA256 of
 * `${t}.${rawBody}` keyed by each secret, lowercase hex.
 */
export function signatureHeader(rawBody: string | Uint8Array, secrets: readonly string[], timestampSeconds: number): string {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new RangeError(`the signature timestamp must be whole seconds since the epoch (got ${timestampSeconds})`);
  }
  const usable = secrets.filter((secret) => secret.length > 0);
  if (usable.length === 0) throw new RangeError('a webhook signature needs at least one non-empty secret');
  const signatures = usable.map((secret) => `${SCHEME}=${hmac(secret, timestampSeconds, rawBody).toString('hex')}`);
  return [`t=${timestampSeconds}`, ...signatures].join(',');
}

export type VerificationResult =
  | { valid: true; timestamp: number }
  | { valid: false; reason: 'missing_header' | 'malformed_header' | 'timestamp_outside_tolerance' | 'no_matching_signature' };

interface ParsedHeader {
  timestamp: number;
  signatures: string[];
}

function parseHeader(header: string): ParsedHeader | undefined {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const item = part.trim();
    // A trailing or doubled comma carries nothing; tolerating it costs no safety.
    if (item === '') continue;
    const equals = item.indexOf('=');
    if (equals <= 0) return undefined;
    const key = item.slice(0, equals).trim();
    const value = item.slice(equals + 1).trim();
    if (key === 't') {
      // Two timestamps would let an attacker pick which one a lenient parser reads.
      if (timestamp !== undefined || !TIMESTAMP_PATTERN.test(value)) return undefined;
      timestamp = Number(value);
    } else if (key === SCHEME) {
      signatures.push(value);
    }
    // Any other key is a future scheme (v2=…) or extension, which this version must skip, not refuse.
  }
  return timestamp === undefined ? undefined : { timestamp, signatures };
}

function toMilliseconds(now: Date | number | undefined): number {
  if (now === undefined) return Date.now();
  return now instanceof Date ? now.getTime() : now;
}

function asSecretList(secrets: unknown): string[] {
  const list: unknown[] = Array.isArray(secrets) ? secrets : [secrets];
  // An empty secret is a configuration mistake, and a key anyone can guess: it must never verify.
  return list.filter((secret): secret is string => typeof secret === 'string' && secret.length > 0);
}

function matches(expected: Buffer, candidate: string): boolean {
  if (candidate.length !== HMAC_HEX_LENGTH || !HEX_PATTERN.test(candidate)) return false;
  return timingSafeEqual(expected, Buffer.from(candidate, 'hex'));
}

/**
 * Parse t; reject when more than toleranceSeconds away from now (both directions); recompute over
 * the RAW bytes; compare in constant time; accept if any v1 matches any secret.
 *
 * `now` is a Date or milliseconds since the epoch (as `Date.now()` returns). Never throws: every
 * input, however malformed, yields a result.
 */
export function verifyWebhookSignature(
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  secrets: string | readonly string[],
  options: { toleranceSeconds?: number; now?: Date | number } = {},
): VerificationResult {
  if (header === null || header === undefined || (typeof header === 'string' && header.trim() === '')) {
    return { valid: false, reason: 'missing_header' };
  }
  if (typeof header !== 'string') return { valid: false, reason: 'malformed_header' };
  const parsed = parseHeader(header);
  if (!parsed) return { valid: false, reason: 'malformed_header' };

  const tolerance = options?.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowMs = toMilliseconds(options?.now);
  // NaN compares false with everything, so a bad `now` or tolerance must fail closed explicitly.
  if (typeof tolerance !== 'number' || Number.isNaN(tolerance) || typeof nowMs !== 'number' || !Number.isFinite(nowMs)) {
    return { valid: false, reason: 'timestamp_outside_tolerance' };
  }
  if (!(Math.abs(nowMs / 1000 - parsed.timestamp) <= tolerance)) {
    return { valid: false, reason: 'timestamp_outside_tolerance' };
  }

  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    // A parsed object cannot be verified: its bytes are gone. Treat it as a mismatch, not a crash.
    return { valid: false, reason: 'no_matching_signature' };
  }
  let found = false;
  for (const secret of asSecretList(secrets)) {
    const expected = hmac(secret, parsed.timestamp, rawBody);
    // Every candidate is compared even after a match, so timing does not reveal which one matched.
    for (const candidate of parsed.signatures) {
      if (matches(expected, candidate)) found = true;
    }
  }
  return found ? { valid: true, timestamp: parsed.timestamp } : { valid: false, reason: 'no_matching_signature' };
}
