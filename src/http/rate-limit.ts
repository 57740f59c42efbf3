import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis, RedisOptions } from 'ioredis';
import type { RateLimiterRedis } from 'rate-limiter-flexible';
import type { Clock } from '../lib/clock.ts';
import { AppError } from '../lib/errors.ts';
import type { CredentialKind } from '../modules/credentials/scopes.schemas.ts';
import type { HttpServer } from './server.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Whether the request has been charged to a bucket: in `onRequest`, or else in `onSend`. */
    rateLimitCharged: boolean;
  }
}

/**
 * Rate limits for every route, as token buckets (docs/rate-limits.md): one bucket per credential,
 * sized by its kind, and one per source address for traffic no credential vouches for. Every
 * response that a bucket governed describes it in `X-RateLimit-*`; a refusal is `rate_limited` with
 * `Retry-After`. Public routes that probes and browsers hit (health, documentation) opt out in their
 * access declaration with `rateLimit: false`.
 */

export interface BucketPolicy {
  /** Tokens a full bucket holds: the largest burst, and the value of X-RateLimit-Limit. */
  readonly burst: number;
  /** Tokens added back per second, up to `burst`. */
  readonly perSecond: number;
}

export const CREDENTIAL_BUCKETS: Readonly<Record<CredentialKind, BucketPolicy>> = {
  connection_key: { burst: 200, perSecond: 100 },
  organization_key: { burst: 400, perSecond: 200 },
  oauth_token: { burst: 40, perSecond: 20 },
  // The spec gives none. A dashboard token is a member's browser session, which fans out a burst of
  // reads on every page; owners and admins can mint an organization key from that very session, so
  // a tighter bucket would protect nothing.
  dashboard_token: { burst: 400, perSecond: 200 },
};

const CREDENTIAL_NAMES: Readonly<Record<CredentialKind, string>> = {
  connection_key: 'connection key',
  organization_key: 'organization key',
  oauth_token: 'OAuth token',
  dashboard_token: 'dashboard token',
};

/**
 * The credential buckets with burst and rate both multiplied by `multiplier`
 * (RATE_LIMIT_CREDENTIAL_MULTIPLIER): the time a bucket takes to fill stays the spec's. Only
 * benchmarks and load tests raise it, so that the limiter runs on every request but never refuses.
 */
export function credentialBuckets(multiplier: number): Readonly<Record<CredentialKind, BucketPolicy>> {
  if (multiplier === 1) return CREDENTIAL_BUCKETS;
  const scale = (policy: BucketPolicy): BucketPolicy => ({ burst: policy.burst * multiplier, perSecond: policy.perSecond * multiplier });
  return {
    connection_key: scale(CREDENTIAL_BUCKETS.connection_key),
    organization_key: scale(CREDENTIAL_BUCKETS.organization_key),
    oauth_token: scale(CREDENTIAL_BUCKETS.oauth_token),
    dashboard_token: scale(CREDENTIAL_BUCKETS.dashboard_token),
  };
}

/** The per-address bucket: `perMinute` requests at once, refilled over one minute. */
export function addressBucket(perMinute: number): BucketPolicy {
  return { burst: perMinute, perSecond: perMinute / 60 };
}

/** One request's outcome, in the terms of the response headers. */
export interface Take {
  readonly allowed: boolean;
  readonly limit: number;
  /** Whole tokens left after this request. */
  readonly remaining: number;
  /** Until the bucket is full again. */
  readonly resetMs: number;
  /** On a refusal: until one token is back. */
  readonly retryAfterMs: number;
}

// Policies such as 20 a minute make fractional intervals; this keeps 38.9999… tokens from reading as 38.
const EPSILON = 1e-6;

/**
 * The token bucket as a pure function of its one piece of state, its debt: how long until it is full
 * again (0 or less: full). Holding a duration rather than a token count and a timestamp is what lets
 * Redis keep the state as a key's time-to-live (TOKEN_BUCKET_LUA mirrors this function). A `cost` of 0
 * describes the bucket without spending from it.
 */
export function takeToken(debtMs: number, policy: BucketPolicy, cost = 1): { take: Take; debtMs: number } {
  const intervalMs = 1000 / policy.perSecond;
  const fullMs = policy.burst * intervalMs;
  const debt = Math.max(0, debtMs);
  const after = debt + cost * intervalMs;
  if (after > fullMs + EPSILON) {
    return {
      take: { allowed: false, limit: policy.burst, remaining: 0, resetMs: debt, retryAfterMs: after - fullMs },
      debtMs: debt,
    };
  }
  return {
    take: { allowed: true, limit: policy.burst, remaining: Math.floor((fullMs - after) / intervalMs + EPSILON), resetMs: after, retryAfterMs: 0 },
    debtMs: after,
  };
}

/** Whole seconds, rounded up, as the headers carry them. */
export function wholeSeconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000 - EPSILON));
}

export interface BucketStore {
  take(bucket: string, key: string, policy: BucketPolicy, cost?: number): Promise<Take>;
}

// Full buckets are forgotten lazily; a sweep every so many takes bounds the map under a flood of addresses.
const SWEEP_EVERY = 4096;

/** A bucket store that answers at once: the hook then charges a request with no promise. */
export interface MemoryBuckets {
  take(bucket: string, key: string, policy: BucketPolicy, cost?: number): Take;
}

/** Buckets in this process's memory, on the service's clock (so tests move time instead of sleeping). */
export function createMemoryBuckets(clock: Clock): MemoryBuckets {
  const fullAt = new Map<string, number>();
  let takes = 0;
  return {
    take(bucket, key, policy, cost = 1) {
      const now = clock.now().getTime();
      const id = `${bucket}:${key}`;
      const { take, debtMs } = takeToken((fullAt.get(id) ?? now) - now, policy, cost);
      if (debtMs > 0) fullAt.set(id, now + debtMs);
      else fullAt.delete(id);
      if (++takes % SWEEP_EVERY === 0) {
        for (const [entry, at] of fullAt) if (at <= now) fullAt.delete(entry);
      }
      return take;
    },
  };
}

/**
 * takeToken in Redis, atomically, in the shape rate-limiter-flexible's Redis store expects of its
 * script: ARGV[1] tokens to take, ARGV[3] the burst (`points`), ARGV[4] the seconds an empty bucket
 * takes to fill (`duration`); it returns {consumed points, milliseconds}, where consumed is
 * burst − whole tokens left, or burst + 1 for a refusal, and the milliseconds are until the bucket is
 * full, or for a refusal until one token is back. The debt is the key's time-to-live, so the clock is
 * Redis's own: processes sharing a bucket must share a clock, and a full bucket's key simply expires.
 */
export const TOKEN_BUCKET_LUA = `
local cost = tonumber(ARGV[1])
local burst = tonumber(ARGV[3])
local full = tonumber(ARGV[4]) * 1000
local interval = full / burst
local debt = redis.call('pttl', KEYS[1])
if debt < 0 then debt = 0 end
local after = debt + cost * interval
if after > full + ${EPSILON} then
  return {burst + 1, math.ceil(after - full)}
end
if cost > 0 then redis.call('set', KEYS[1], '1', 'PX', math.ceil(after)) end
return {burst - math.floor((full - after) / interval + ${EPSILON}), math.ceil(after)}
`;

/**
 * For the ioredis client that app.ts builds: fail fast rather than queue, so that while Redis is away
 * requests fall back to memory buckets at once instead of waiting on a reconnect.
 */
export const RATE_LIMIT_REDIS_OPTIONS: RedisOptions = { connectTimeout: 2000, commandTimeout: 500, maxRetriesPerRequest: 1 };
const FIRST_CONNECTION_WAIT_MS = 3000;

/**
 * Buckets in Redis, shared by every process using the same Redis and key prefix. rate-limiter-flexible
 * counts fixed windows; its Redis store takes a replacement script, which is how it runs a true token
 * bucket here. The client's `rlflxIncr` command becomes that script, so this client must not also
 * serve a fixed-window RateLimiterRedis. The library is loaded here, only by a process with Redis.
 */
export async function createRedisBuckets(redis: Redis, keyPrefix: string): Promise<BucketStore> {
  const { RateLimiterRedis, RateLimiterRes } = await import('rate-limiter-flexible');
  const limiters = new Map<string, RateLimiterRedis>();

  function limiterFor(bucket: string, policy: BucketPolicy): RateLimiterRedis {
    const name = `${bucket}:${policy.burst}:${policy.perSecond}`;
    let limiter = limiters.get(name);
    if (!limiter) {
      const fullSeconds = Math.round((policy.burst / policy.perSecond) * 1000) / 1000;
      // Below one second the store skips the script (it floors `duration` to whole seconds).
      if (fullSeconds < 1) throw new Error(`a ${bucket} bucket must take at least a second to fill`);
      limiter = new RateLimiterRedis({
        storeClient: redis,
        keyPrefix: `${keyPrefix}:${bucket}`,
        points: policy.burst,
        duration: fullSeconds,
        customIncrTtlLuaScript: TOKEN_BUCKET_LUA,
        rejectIfRedisNotReady: true,
      });
      limiters.set(name, limiter);
    }
    return limiter;
  }

  return {
    async take(bucket, key, policy, cost = 1) {
      try {
        const result = await limiterFor(bucket, policy).consume(key, cost);
        return { allowed: true, limit: policy.burst, remaining: result.remainingPoints, resetMs: result.msBeforeNext, retryAfterMs: 0 };
      } catch (error) {
        if (!(error instanceof RateLimiterRes)) throw error;
        // A refusal means the debt exceeds a full bucket less one token by exactly the wait for that token.
        const intervalMs = 1000 / policy.perSecond;
        const resetMs = error.msBeforeNext + (policy.burst - 1) * intervalMs;
        return { allowed: false, limit: policy.burst, remaining: 0, resetMs, retryAfterMs: error.msBeforeNext };
      }
    },
  };
}

export interface RateLimitOptions {
  /** Set: buckets are shared through Redis; unset: each process keeps its own, in memory. */
  redis?: Redis | undefined;
  /** The clock of the memory buckets. */
  clock: Clock;
  keyPrefix: string;
  unauthenticatedPerMinute: number;
  /** Multiplies every credential bucket (see `credentialBuckets`); 1 is the spec's limits. */
  credentialMultiplier: number;
}

function isExempt(request: FastifyRequest): boolean {
  const access = request.routeOptions.config.access;
  return access?.public === true && access.rateLimit === false;
}

function setHeaders(reply: FastifyReply, take: Take): void {
  void reply.header('x-ratelimit-limit', String(take.limit));
  void reply.header('x-ratelimit-remaining', String(take.remaining));
  void reply.header('x-ratelimit-reset', String(wholeSeconds(take.resetMs)));
}

function describeRate(policy: BucketPolicy): string {
  return Number.isInteger(policy.perSecond) ? `${policy.perSecond} a second` : `${Math.round(policy.perSecond * 60)} a minute`;
}

/**
 * Registers the limits on every route. Must come after registerAccessControl: the bucket depends on
 * who is calling. Resolves once a configured Redis has answered or failed its first connection, so
 * the first requests already share buckets.
 */
export async function registerRateLimits(app: HttpServer, options: RateLimitOptions): Promise<void> {
  const memory = createMemoryBuckets(options.clock);
  const shared = options.redis ? await createRedisBuckets(options.redis, options.keyPrefix) : undefined;
  const perAddress = addressBucket(options.unauthenticatedPerMinute);
  const perCredential = credentialBuckets(options.credentialMultiplier);
  if (options.credentialMultiplier !== 1) {
    app.log.warn(
      { multiplier: options.credentialMultiplier },
      'credential rate limits raised (RATE_LIMIT_CREDENTIAL_MULTIPLIER): for benchmarks and load tests only, never in production',
    );
  }
  // A field of every request rather than a WeakSet: a weak collection's entry costs the garbage
  // collector work on every young-generation pass (1.7 % of identity's CPU, perf), and every
  // request was added to it.
  app.decorateRequest('rateLimitCharged', false);

  // Logged on changes only: during an outage every request would otherwise repeat the same warning.
  let storeDown = false;
  const storeFailed = (error: unknown) => {
    if (storeDown) return;
    storeDown = true;
    app.log.warn({ err: error }, 'rate-limit store (Redis) unreachable: each process limits with its own memory buckets until it is back');
  };
  const storeBack = () => {
    if (!storeDown) return;
    storeDown = false;
    app.log.info('rate-limit store (Redis) reachable again: buckets are shared');
  };

  function bucketOf(request: FastifyRequest): { bucket: string; key: string; policy: BucketPolicy } {
    const principal = request.principal;
    if (principal) return { bucket: principal.kind, key: principal.credentialId, policy: perCredential[principal.kind] };
    return { bucket: 'address', key: request.ip, policy: perAddress };
  }

  function takeFromMemory(request: FastifyRequest, cost: number): Take | undefined {
    const { bucket, key, policy } = bucketOf(request);
    try {
      return memory.take(bucket, key, policy, cost);
    } catch (error) {
      // A limiter fault must never become a 500: the request goes through, unmetered.
      request.log.error({ err: error }, 'rate limiter failed; request not limited');
      return undefined;
    }
  }

  async function take(request: FastifyRequest, cost: number): Promise<Take | undefined> {
    if (shared) {
      const { bucket, key, policy } = bucketOf(request);
      try {
        const result = await shared.take(bucket, key, policy, cost);
        storeBack();
        return result;
      } catch (error) {
        // Neither open (an outage would lift every limit) nor closed (it would stop the whole API):
        // each process enforces the limits on its own, so the service admits at most N times them.
        storeFailed(error);
      }
    }
    return takeFromMemory(request, cost);
  }

  /** Describes the bucket in the headers; the refusal when it was empty. */
  function charged(request: FastifyRequest, reply: FastifyReply, result: Take | undefined): AppError | undefined {
    if (!result) return undefined;
    setHeaders(reply, result);
    if (result.allowed) return undefined;
    const principal = request.principal;
    const who = principal ? `This ${CREDENTIAL_NAMES[principal.kind]}` : 'Unauthenticated traffic from this address';
    const { policy } = bucketOf(request);
    const retryAfter = Math.max(1, wholeSeconds(result.retryAfterMs));
    return new AppError('rate_limited', `${who} may send ${policy.burst} requests at once, refilled at ${describeRate(policy)}; retry in ${retryAfter} s.`, {
      headers: { 'retry-after': String(retryAfter) },
    });
  }

  // A callback rather than an async function: with buckets in memory a request is charged with no
  // promise at all, on the path every request takes.
  app.addHook('onRequest', (request, reply, done) => {
    if (isExempt(request)) {
      done();
      return;
    }
    request.rateLimitCharged = true;
    if (!shared) {
      done(charged(request, reply, takeFromMemory(request, 1)));
      return;
    }
    void take(request, 1)
      .then((result) => charged(request, reply, result))
      .then(done, done);
  });

  // Requests refused before the hook above could run. A failed authentication spends from its
  // address's bucket and reports it, but keeps its own 401: a wrong or revoked credential is not
  // fixed by waiting, which is what a 429 would say. A 403 spends from its credential's bucket. A 5xx
  // (draining) is the service's failure, not the caller's: reported, not charged.
  // A callback rather than an async function: almost every answer was charged in onRequest, and
  // would otherwise pay a promise here for nothing.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.rateLimitCharged || isExempt(request)) {
      done(null, payload);
      return;
    }
    request.rateLimitCharged = true;
    void take(request, reply.statusCode >= 500 ? 0 : 1).then((result) => {
      if (result) setHeaders(reply, result);
      done(null, payload);
    });
  });

  if (options.redis) {
    const redis = options.redis;
    redis.on('error', storeFailed);
    redis.on('ready', storeBack);
    if (['connecting', 'connect', 'reconnecting'].includes(redis.status)) {
      await new Promise<void>((resolve) => {
        const settle = () => {
          clearTimeout(timer);
          redis.off('ready', settle).off('error', settle).off('end', settle);
          resolve();
        };
        const timer = setTimeout(settle, FIRST_CONNECTION_WAIT_MS);
        redis.on('ready', settle).on('error', settle).on('end', settle);
      });
    }
  }
}
