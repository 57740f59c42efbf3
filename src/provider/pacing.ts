/**
 * Outbound pacing (docs/pacing.md): every call that posts to a number's `/messages` endpoint first
 * waits for a slot under that number's throughput ceiling, and a throttle answer from the provider is
 * waited out and retried instead of failing the send.
 *
 * The pacer is a GCRA with a burst of one: each key (a phone number id) keeps one value, the time its
 * next slot is free. Acquiring takes the later of that time and now as its slot, pushes the value one
 * emission interval further, and then sleeps until the slot: one store operation and one timer per
 * send, never a polling loop, and slots go out in the order they were asked for. A send woken too late
 * after its slot takes a new one rather than crowd the sends after it. In memory the value
 * lives in a map; with Redis, in one key per number that a Lua script reads and moves on Redis's own
 * clock, so every process sharing that Redis shares the ceiling.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Clock } from '../lib/clock.ts';
import { NO_METRICS, type Metrics } from '../lib/metrics.ts';
import { isProviderError, ProviderError, type Provider, type ProviderCredentials, type SendOptions } from './provider.ts';

/** cloud-api-facts.md §8.1: messages a second per registered number, inbound and outbound together. */
export const THROUGHPUT_PER_SECOND = { standard: 80, coexistence: 20, upgraded: 1000 } as const;

/**
 * Rejects with the signal's reason when it aborts first. Zero or less still yields to the event loop
 * (setImmediate): see the pacer's use of it.
 */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const sleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const done = () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const timer = ms > 0 ? setTimeout(done, ms) : undefined;
    const immediate = ms > 0 ? undefined : setImmediate(done);
    const onAbort = () => {
      clearTimeout(timer);
      clearImmediate(immediate);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * A slot further away than the pacer's `maxWaitMs`: nothing was reserved. Waiting in memory that long
 * would outlive the caller's time-out (a job's, a request's) and then send anyway; the caller's queue
 * is the place to wait that long.
 */
export class PacingQueueFullError extends Error {
  readonly key: string;
  /** How far away the next free slot was. */
  readonly waitMs: number;
  readonly maxWaitMs: number;
  readonly retryable = true;

  constructor(key: string, waitMs: number, maxWaitMs: number) {
    super(`The next send slot of ${key} is ${Math.ceil(waitMs)} ms away, more than the ${maxWaitMs} ms a send may wait for one.`);
    this.name = 'PacingQueueFullError';
    this.key = key;
    this.waitMs = waitMs;
    this.maxWaitMs = maxWaitMs;
  }
}

// ---------------------------------------------------------------------------------------------
// Slot stores: where each key's next free time lives.

export interface Reservation {
  /** False when the slot would have been more than `maxWaitMs` away; then nothing was reserved. */
  readonly admitted: boolean;
  /** From the store's now until the slot. */
  readonly waitMs: number;
  /** The slot, in milliseconds since the epoch on the store's clock (Redis's own, for Redis). */
  readonly slotMs: number;
}

export interface SlotStore {
  reserve(key: string, intervalMs: number, maxWaitMs: number): Promise<Reservation>;
}

// A key whose next free time has passed holds nothing worth keeping; a sweep every so many
// reservations drops those, so the map holds the keys active recently and no more.
const SWEEP_EVERY = 1024;

/** `now`: epoch milliseconds, fractions welcome. */
export function createMemorySlots(now: () => number): SlotStore {
  const nextFree = new Map<string, number>();
  let reservations = 0;
  return {
    async reserve(key, intervalMs, maxWaitMs) {
      const at = now();
      const slotMs = Math.max(at, nextFree.get(key) ?? at);
      const waitMs = slotMs - at;
      if (waitMs > maxWaitMs) return { admitted: false, waitMs, slotMs };
      nextFree.set(key, slotMs + intervalMs);
      if (++reservations % SWEEP_EVERY === 0) {
        for (const [entry, free] of nextFree) if (free <= at) nextFree.delete(entry);
      }
      return { admitted: true, waitMs, slotMs };
    },
  };
}

/**
 * The memory store's rule on Redis's clock, in microseconds. ARGV[1]: the emission interval, ARGV[2]:
 * the longest wait admitted. Returns {admitted 1|0, wait, slot}. The key expires when its next free
 * time passes, so an idle number leaves nothing behind. TIME inside a script that writes needs
 * Redis 5 or newer (scripts replicate their effects, not themselves).
 */
export const RESERVE_SLOT_LUA = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = tonumber(ARGV[1])
local max_wait = tonumber(ARGV[2])
local slot = tonumber(redis.call('GET', KEYS[1]))
if slot == nil or slot < now then slot = now end
local wait = slot - now
if wait > max_wait then return {0, wait, slot} end
local next_free = slot + interval
redis.call('SET', KEYS[1], string.format('%.0f', next_free), 'PX', math.ceil((next_free - now) / 1000))
return {1, wait, slot}
`;
const RESERVE_SLOT_SHA = createHash('sha1').update(RESERVE_SLOT_LUA).digest('hex');

/** Keys are `<keyPrefix>:<key>`. */
export function createRedisSlots(redis: Redis, keyPrefix: string): SlotStore {
  return {
    async reserve(key, intervalMs, maxWaitMs) {
      const name = `${keyPrefix}:${key}`;
      // Rounding the interval up never lets the rate exceed the ceiling.
      const args = [Math.ceil(intervalMs * 1000), Math.floor(maxWaitMs * 1000)];
      let reply: unknown;
      try {
        reply = await redis.evalsha(RESERVE_SLOT_SHA, 1, name, ...args);
      } catch (error) {
        // A Redis restarted or flushed has forgotten the script; EVAL loads it again.
        if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
        reply = await redis.eval(RESERVE_SLOT_LUA, 1, name, ...args);
      }
      const [admitted, waitUs, slotUs] = reply as [number, number, number];
      return { admitted: admitted === 1, waitMs: waitUs / 1000, slotMs: slotUs / 1000 };
    },
  };
}

// The most two clocks are taken to drift apart: 500 ppm, the most NTP slews a clock by.
const MAX_DRIFT = 5e-4;

/**
 * This clock minus Redis's, for turning Redis's slots into local deadlines. The answer to a call sent
 * at `sentAt` and received at `receivedAt` was computed at Redis's `remoteNow` somewhere between the
 * two, so receivedAt − remoteNow bounds the offset from above and sentAt − remoteNow from below. The
 * estimate is the smallest upper bound seen (the fastest answer's), loosened with age by MAX_DRIFT:
 * never below the true offset, so a deadline is never before its slot. The time of each answer alone
 * would not do: a burst's answers come back together, after Redis has run the whole batch, and the
 * first slots' deadlines would be late by that much, later than the pacer could notice. A lower bound
 * above the estimate proves it wrong (one of the clocks stepped): the estimate starts again.
 */
function createClockOffset() {
  let bound = Infinity;
  let boundAt = 0;
  const current = (at: number) => bound + (at - boundAt) * MAX_DRIFT;
  return {
    observe(sentAt: number, receivedAt: number, remoteNow: number): void {
      const upper = receivedAt - remoteNow;
      const aged = current(receivedAt);
      if (upper <= aged || sentAt - remoteNow > aged) {
        bound = upper;
        boundAt = receivedAt;
      }
    },
    current,
  };
}

// ---------------------------------------------------------------------------------------------
// The pacer.

export interface PacerLog {
  warn(details: object, message: string): void;
  info(message: string): void;
}

export interface PacerOptions {
  /**
   * The pacer's clock: the memory store's slots and every send's deadline. A monotonic one by
   * default, so a step of the wall clock cannot stall a number.
   */
  clock?: Clock;
  /**
   * Set: slots are shared by every pacer on this Redis with the same `keyPrefix`. Give it a client that
   * fails fast (like the rate limits' one): while Redis cannot answer, each process paces on its own.
   */
  redis?: Redis | undefined;
  keyPrefix: string;
  sleep?: Sleep;
  /** A slot further away than this is refused with PacingQueueFullError (default 10 s). */
  maxWaitMs?: number;
  /**
   * How much later than its slot a send may reach the provider without any one-second window there
   * holding more than the ceiling: slots are spaced (1000 + slackMs) / perSecond ms apart, which
   * costs slackMs / 10 % of the throughput (default 25; 0 is the exact 1 / perSecond spacing).
   * See docs/pacing.md.
   */
  slackMs?: number;
  /**
   * The part of `slackMs` this process may spend itself: a send woken later than this after its slot
   * (a stalled event loop, a starved CPU) takes a new slot instead of going. The rest is for the way
   * to the provider (default 5).
   */
  maxLateMs?: number;
  log?: PacerLog;
  /** Told how long each call waited for its slot (on the pacer's clock), and of each refusal. */
  metrics?: Pick<Metrics, 'pacingWait' | 'pacingRefused'>;
}

export interface Pacer {
  /**
   * Resolves when the caller may send once under `perSecond` for `key`. Rejects with
   * PacingQueueFullError when the slot is too far away (nothing reserved), or with the signal's reason
   * when it aborts (a slot already reserved is left unused). `Infinity` means no ceiling.
   */
  acquire(key: string, perSecond: number, signal?: AbortSignal): Promise<void>;
  /** How far apart this pacer spaces the slots of a ceiling: work queued this far apart never waits on it. */
  intervalMs(perSecond: number): number;
}

export const DEFAULT_MAX_WAIT_MS = 10_000;
export const DEFAULT_SLACK_MS = 25;
export const DEFAULT_MAX_LATE_MS = 5;
/** Times a send that woke too late takes a new slot before it goes, late or not (docs/pacing.md). */
export const MAX_LATE_RESERVATIONS = 3;

// Epoch milliseconds that never step back, with the fraction kept (a Date would truncate it).
const monotonicNow = () => performance.timeOrigin + performance.now();

export function createPacer(options: PacerOptions): Pacer {
  const clock = options.clock;
  const now = clock ? () => clock.now().getTime() : monotonicNow;
  const memory = createMemorySlots(now);
  const shared = options.redis ? createRedisSlots(options.redis, options.keyPrefix) : undefined;
  const wait = options.sleep ?? sleep;
  const maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  const slackMs = options.slackMs ?? DEFAULT_SLACK_MS;
  const maxLateMs = Math.min(slackMs, options.maxLateMs ?? DEFAULT_MAX_LATE_MS);
  const metrics = options.metrics ?? NO_METRICS;

  const redisOffset = createClockOffset();

  // Logged on changes only: during an outage every send would otherwise repeat the warning.
  let sharedDown = false;

  async function reserveShared(store: SlotStore, key: string, intervalMs: number): Promise<Reservation | undefined> {
    try {
      const reservation = await store.reserve(key, intervalMs, maxWaitMs);
      if (sharedDown) {
        sharedDown = false;
        options.log?.info('pacing store (Redis) reachable again: send slots are shared');
      }
      return reservation;
    } catch (error) {
      // Neither stop sending (an outage of a cache would stop all messaging) nor stop pacing: each
      // process paces alone, so N processes may reach N times the ceiling, and the provider's
      // throttle answers that this brings are retried.
      if (!sharedDown) {
        sharedDown = true;
        options.log?.warn({ err: error }, 'pacing store (Redis) unreachable: each process paces its sends alone until it is back');
      }
      return undefined;
    }
  }

  /**
   * The slot's time on this pacer's clock, as a function: a Redis slot is mapped with the best
   * estimate of the clocks' offset when asked, which the answers that came after may have improved.
   * Throws PacingQueueFullError when the slot is too far away.
   */
  async function reserve(key: string, intervalMs: number): Promise<() => number> {
    if (shared) {
      const sentAt = now();
      const reservation = await reserveShared(shared, key, intervalMs);
      if (reservation) {
        if (!reservation.admitted) throw new PacingQueueFullError(key, reservation.waitMs, maxWaitMs);
        redisOffset.observe(sentAt, now(), reservation.slotMs - reservation.waitMs);
        return () => reservation.slotMs + redisOffset.current(now());
      }
    }
    const reservation = await memory.reserve(key, intervalMs, maxWaitMs);
    if (!reservation.admitted) throw new PacingQueueFullError(key, reservation.waitMs, maxWaitMs);
    return () => reservation.slotMs;
  }

  const intervalMs = (perSecond: number) => (1000 + slackMs) / perSecond;

  return {
    intervalMs,

    async acquire(key, perSecond, signal) {
      if (!(perSecond > 0)) throw new RangeError(`a throughput ceiling must be above 0 a second, got ${perSecond}`);
      signal?.throwIfAborted();
      if (perSecond === Infinity) return;
      const askedAt = now();
      for (let late = 0; ; late++) {
        let slotAt: () => number;
        try {
          slotAt = await reserve(key, intervalMs(perSecond));
        } catch (error) {
          if (error instanceof PacingQueueFullError) metrics.pacingRefused();
          throw error;
        }
        signal?.throwIfAborted();
        // Until the slot's time, not for the wait reported: the time since reserving (the rest of a
        // burst being reserved on this thread) must not make the send later. A slot already due
        // still waits for the next turn of the event loop: a burst's first sends would otherwise be
        // let through while the rest of the burst is still being set up, and leave only after it,
        // later than the check below could see. From a timer's callback, the caller's send starts
        // before any other callback runs.
        await wait(Math.max(0, slotAt() - now()), signal);
        // Woken later than allowed (a stalled event loop, a starved CPU), this send would crowd the
        // ones after it into less than a second: it takes a new slot instead. After a few times it
        // goes late all the same; the provider's throttle answer, retried, is the backstop.
        if (now() - slotAt() <= maxLateMs || late >= MAX_LATE_RESERVATIONS) {
          metrics.pacingWait((now() - askedAt) / 1000);
          return;
        }
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The provider wrapper.

/** Every call that posts to `/{phone_number_id}/messages`, which counts against the number's throughput. */
export const PACED_METHODS = ['sendMessage', 'markRead', 'sendTyping'] as const satisfies readonly (keyof Provider)[];

export interface PacingOptions {
  pacer: Pacer;
  /** The connection's ceiling in messages a second (THROUGHPUT_PER_SECOND has the provider's). */
  ceilingOf(credentials: ProviderCredentials): number | Promise<number>;
  sleep?: Sleep;
  /** Retries after a throttle answer before its error is thrown to the caller (default 3). */
  maxThrottleRetries?: number;
  /**
   * Throttle waits of one call added up may not exceed this (default 10 s); a throttle asking for a
   * longer wait than is left is thrown at once, for the caller's queue to wait out.
   */
  maxThrottleWaitMs?: number;
  /** For tests: the source of the jitter added to each throttle wait. */
  random?: () => number;
  /** Aborts every wait (for a slot or out a throttle) with its reason: for shutting down. */
  signal?: AbortSignal;
}

export const DEFAULT_MAX_THROTTLE_RETRIES = 3;
export const DEFAULT_MAX_THROTTLE_WAIT_MS = 10_000;
// Up to a fifth more than the provider asked for, so sends throttled together do not return together.
const THROTTLE_JITTER = 0.2;

type PacedCall = (credentials: ProviderCredentials, ...rest: unknown[]) => Promise<unknown>;

/**
 * The provider with its `/messages` calls paced per number and their throttle answers retried. Every
 * other member, including ones the port gains later, is the provider's own, bound to it (a Proxy
 * rather than a copy, so class instances with private fields work too).
 */
export function withPacing<P extends Provider>(provider: P, options: PacingOptions): P {
  const wait = options.sleep ?? sleep;
  const random = options.random ?? Math.random;
  const maxRetries = options.maxThrottleRetries ?? DEFAULT_MAX_THROTTLE_RETRIES;
  const maxThrottleWaitMs = options.maxThrottleWaitMs ?? DEFAULT_MAX_THROTTLE_WAIT_MS;

  async function slot(credentials: ProviderCredentials, perSecond: number, signal: AbortSignal | undefined): Promise<void> {
    try {
      await options.pacer.acquire(credentials.phoneNumberId, perSecond, signal);
    } catch (error) {
      if (!(error instanceof PacingQueueFullError)) throw error;
      // To the caller this is the provider's limit, met before the provider had to say so.
      const aheadSeconds = Math.ceil(error.waitMs / 1000);
      throw new ProviderError({
        category: 'throttled',
        retryable: true,
        message: `This number's sends are queued ${aheadSeconds} s ahead at its ceiling of ${perSecond} a second; try again later.`,
        retryAfterSeconds: Math.max(1, Math.ceil((error.waitMs - error.maxWaitMs) / 1000)),
        cause: error,
      });
    }
  }

  async function paced(credentials: ProviderCredentials, call: () => Promise<unknown>, waitSignal: AbortSignal | undefined): Promise<unknown> {
    const perSecond = await options.ceilingOf(credentials);
    const signals = [options.signal, waitSignal].filter((signal) => signal !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    let waitedMs = 0;
    for (let retries = 0; ; retries++) {
      await slot(credentials, perSecond, signal);
      try {
        return await call();
      } catch (error) {
        if (!isProviderError(error) || error.category !== 'throttled' || retries >= maxRetries) throw error;
        // The port's promise for a throttle without a hint: the per-second budget, one second.
        const delayMs = (error.retryAfterSeconds ?? 1) * 1000 * (1 + THROTTLE_JITTER * random());
        if (waitedMs + delayMs > maxThrottleWaitMs) throw error;
        waitedMs += delayMs;
        await wait(delayMs, signal);
      }
    }
  }

  const overrides = new Map<PropertyKey, PacedCall>(
    PACED_METHODS.map((name) => {
      const original = provider[name] as PacedCall;
      // `sendMessage(credentials, message, options)` is the one paced call that takes options.
      const call: PacedCall = (credentials, ...rest) =>
        paced(credentials, () => original.call(provider, credentials, ...rest), (rest[1] as SendOptions | undefined)?.waitSignal);
      return [name, call];
    }),
  );

  return new Proxy(provider, {
    get(target, property) {
      const override = overrides.get(property);
      if (override) return override;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
