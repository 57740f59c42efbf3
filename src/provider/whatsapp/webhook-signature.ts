import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The provider's webhook signature (cloud-api-facts.md §4): `X-Hub-Signature-256: sha256=<hex>`,
 * the HMAC-SHA256 of the exact body bytes keyed by the app secret. It must be checked over the raw
 * bytes: the provider escapes non-ASCII characters as `\uXXXX` before signing, so a body parsed and
 * serialised again no longer matches.
 */

const HEADER_PATTERN = /^sha256=([0-9a-f]{64})$/i;

/**
 * Whether `header` is a valid signature of `rawBody`. Tolerates upper-case hex and prefix and
 * surrounding blanks; refuses a missing or malformed header and an empty secret. The comparison
 * takes the same time wherever the digests differ.
 */
export function verifyProviderSignature(rawBody: Buffer, header: string | undefined, appSecret: string): boolean {
  if (header === undefined || appSecret === '') return false;
  const hex = HEADER_PATTERN.exec(header.trim())?.[1];
  if (hex === undefined) return false;
  const expected = createHmac('sha256', appSecret).update(rawBody).digest();
  return timingSafeEqual(Buffer.from(hex, 'hex'), expected);
}
