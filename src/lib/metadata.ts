import { invalidParam } from './errors.ts';

/** `metadata` holds at most this many keys, so that one resource cannot carry an unbounded blob. */
export const METADATA_MAX_KEYS = 50;

/**
 * A `PATCH`'s metadata merged into the stored JSON: keys sent replace their values, keys not sent
 * stay, a key sent as null is removed. The bound applies to the result, so a merge that would pass
 * it is refused (and, called inside the write's transaction, writes nothing).
 */
export function mergeMetadata(stored: string, patch: Record<string, unknown> | undefined): string {
  const metadata = JSON.parse(stored) as Record<string, unknown>;
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value === null) delete metadata[key];
    else metadata[key] = value;
  }
  if (Object.keys(metadata).length > METADATA_MAX_KEYS) {
    throw invalidParam('/metadata', `would hold more than ${METADATA_MAX_KEYS} keys once merged; set unused keys to null`, 'too_many');
  }
  return JSON.stringify(metadata);
}
