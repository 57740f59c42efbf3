import type { Clock } from './clock.ts';

/**
 * Records read from the store that almost every request reads again (the credential behind a
 * bearer, its member, its organization), remembered for a short time. The contract:
 *
 * - An entry lives `ttlMs` from the moment it was read, on the injected clock: a change made by
 *   another process is seen within that time.
 * - `forget(tag)` drops every entry carrying that tag at once: a change made in this process is seen
 *   by the very next request. The owner of the record calls it where it writes.
 * - For `quarantineMs` after a `forget`, a record carrying that tag is answered but not kept, and a
 *   read that was in flight while any `forget` ran is not kept either. So a read that saw the row
 *   before a change committed (another connection on PostgreSQL, while the change's transaction is
 *   still open) cannot put the old record back for another `ttlMs`.
 * - Only records found are kept: a credential that is unknown, revoked or expired costs a lookup
 *   every time, so nothing refused is ever remembered as accepted.
 * - At most `maxEntries`, the least recently used dropped first.
 */
export interface RecentReadsOptions {
  clock: Clock;
  ttlMs: number;
  maxEntries: number;
  quarantineMs?: number;
}

interface Entry<V> {
  value: V;
  until: number;
  tags: readonly string[];
}

export class RecentReads<V> {
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #quarantineMs: number;
  readonly #entries = new Map<string, Entry<V>>();
  /** tag → the keys cached under it. */
  readonly #keysByTag = new Map<string, Set<string>>();
  /** tag → until when a record carrying it is not kept. */
  readonly #quarantined = new Map<string, number>();
  /** Counts `forget` calls, so that a read in flight across one is not kept. */
  #forgets = 0;

  constructor(options: RecentReadsOptions) {
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
    this.#quarantineMs = options.quarantineMs ?? 5 * options.ttlMs;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * The record under `key`: remembered if it is still fresh, else `read` from the store (and kept,
   * tagged by `tagsOf`). What `read` throws is thrown and nothing is kept.
   *
   * A fresh record is returned as it is, not in a promise: the callers on every request's path (the
   * credential in the access hook) then answer without a turn of the microtask queue.
   */
  read<R extends V | undefined>(key: string, read: () => Promise<R>, tagsOf: (value: V) => readonly string[]): R | Promise<R> {
    const now = this.#clock.now().getTime();
    const entry = this.#entries.get(key);
    if (entry) {
      if (entry.until > now) {
        // Least recently used first out: a hit moves to the end of the map's order.
        this.#entries.delete(key);
        this.#entries.set(key, entry);
        return entry.value as R;
      }
      this.#drop(key);
    }
    return this.#readThrough(key, now, read, tagsOf);
  }

  async #readThrough<R extends V | undefined>(key: string, now: number, read: () => Promise<R>, tagsOf: (value: V) => readonly string[]): Promise<R> {
    const forgetsBefore = this.#forgets;
    const value = await read();
    if (value === undefined) return value;
    const tags = tagsOf(value);
    if (this.#forgets !== forgetsBefore || this.#isQuarantined(tags)) return value;
    this.#drop(key);
    this.#entries.set(key, { value, until: now + this.#ttlMs, tags });
    for (const tag of tags) {
      let keys = this.#keysByTag.get(tag);
      if (!keys) this.#keysByTag.set(tag, (keys = new Set()));
      keys.add(key);
    }
    if (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#drop(oldest);
    }
    return value;
  }

  /** Drops every record tagged `tag` now, and keeps none for a while (see the class comment). */
  forget(tag: string): void {
    this.#forgets++;
    const now = this.#clock.now().getTime();
    for (const [quarantined, until] of this.#quarantined) if (until <= now) this.#quarantined.delete(quarantined);
    this.#quarantined.set(tag, now + this.#quarantineMs);
    const keys = this.#keysByTag.get(tag);
    if (keys) for (const key of [...keys]) this.#drop(key);
  }

  #isQuarantined(tags: readonly string[]): boolean {
    if (this.#quarantined.size === 0) return false;
    const now = this.#clock.now().getTime();
    return tags.some((tag) => (this.#quarantined.get(tag) ?? 0) > now);
  }

  #drop(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    for (const tag of entry.tags) {
      const keys = this.#keysByTag.get(tag);
      if (keys?.delete(key) && keys.size === 0) this.#keysByTag.delete(tag);
    }
  }
}
