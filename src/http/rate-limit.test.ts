import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { ConfigError, loadConfig } from '../config/config.ts';
import { HOUR, ManualClock } from '../lib/clock.ts';
import { startServer, suiteScope, type ApiResponse, type TestServer } from '../../test/harness.ts';
import { assertError, createConnection, createKey, signUp } from '../../test/factories.ts';
import { waitFor } from '../../test/wait.ts';
import { addressBucket, CREDENTIAL_BUCKETS, createMemoryBuckets, createRedisBuckets, takeToken, type BucketPolicy } from './rate-limit.ts';

/*
 * With TEST_REDIS_URL set, every server here keeps its buckets in that Redis (each under its own key
 * prefix, so nothing is shared by accident); without it, in memory. Memory buckets run on the test's
 * clock, which stands still, so their counts are exact. Redis keeps its own time, so a count there
 * may include tokens that real time gave back while the test ran: `refilledSince` bounds that.
 */
const redisUrl = process.env.TEST_REDIS_URL;
const store = redisUrl ? 'Redis' : 'memory';
const runId = `rl-test-${randomBytes(4).toString('hex')}`;
let prefixes = 0;

const OAUTH = CREDENTIAL_BUCKETS.oauth_token;
const ADDRESS = addressBucket(20);

/** The spec's per-address default (an empty value is the default), and Redis when the run has one. */
function limitsEnv(prefix = `${runId}-${++prefixes}`): Record<string, string> {
  return { RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '', RATE_LIMIT_KEY_PREFIX: prefix, ...(redisUrl ? { REDIS_URL: redisUrl } : {}) };
}

function refilledSince(startedAt: number, policy: BucketPolicy): number {
  return redisUrl ? Math.floor(((performance.now() - startedAt) * policy.perSecond) / 1000) : 0;
}

async function oauthToken(server: TestServer, organizationId: string): Promise<{ id: string; token: string }> {
  return server.app.store.db
    .transaction()
    .execute((trx) => server.app.services.oauthTokens.issue(trx, { organizationId, clientName: 'Test client', scopes: ['messages:read'], ttlMs: HOUR }));
}

/** `count` identical requests sent at once, the way a client exhausts a bucket. */
function all(server: TestServer, count: number, method: string, path: string, options: { token?: string; body?: unknown } = {}): Promise<ApiResponse[]> {
  return Promise.all(Array.from({ length: count }, () => server.request(method, path, options)));
}

/** Bursts of 60 requests until one is refused: on Redis, real time gives tokens back meanwhile. */
async function spendUntilRefused(server: TestServer, token: string): Promise<ApiResponse> {
  for (let round = 0; round < 5; round++) {
    const refused = (await all(server, 60, 'GET', '/v1/identity', { token })).find((response) => response.status === 429);
    if (refused) return refused;
  }
  assert.fail('300 requests with one credential and none refused');
}

function rateHeaders(response: ApiResponse): { limit: number; remaining: number; reset: number } {
  const read = (name: string) => {
    const value = response.headers.get(name);
    assert.match(value ?? '', /^\d+$/, `${name} on ${response.status}: ${String(value)}`);
    return Number(value);
  };
  return { limit: read('x-ratelimit-limit'), remaining: read('x-ratelimit-remaining'), reset: read('x-ratelimit-reset') };
}

function assertBetween(actual: number, low: number, high: number, what: string) {
  assert.ok(actual >= low && actual <= high, `${what}: ${actual}, expected ${low}..${high}`);
}

describe('rate limits: a token bucket per credential and per source address', () => {
  describe('the bucket, as a function of time', () => {
    it('a full bucket admits its whole burst at once and refuses the next request until one interval has passed', () => {
      let debt = 0;
      for (let i = 1; i <= 40; i++) {
        const { take, debtMs } = takeToken(debt, OAUTH);
        assert.equal(take.allowed, true);
        assert.equal(take.remaining, 40 - i);
        debt = debtMs;
      }
      const refused = takeToken(debt, OAUTH);
      assert.equal(refused.take.allowed, false);
      assert.equal(refused.take.remaining, 0);
      assert.equal(refused.take.retryAfterMs, 50);
      assert.equal(refused.take.resetMs, 2000);
      assert.equal(refused.debtMs, debt, 'a refusal spends nothing');
      assert.equal(takeToken(debt - 49, OAUTH).take.allowed, false);
      assert.equal(takeToken(debt - 50, OAUTH).take.allowed, true);
    });

    it('tokens come back continuously, one per 1/rate seconds, and the bucket is full after burst/rate seconds', () => {
      const empty = 2000;
      assert.equal(takeToken(empty - 1000, OAUTH).take.remaining, 19, 'one second gives back 20 of 40, one of which is taken');
      assert.equal(takeToken(empty - 1000, OAUTH).take.resetMs, 1050);
      assert.equal(takeToken(empty - 5000, OAUTH).take.remaining, 39, 'a bucket never holds more than its burst');
    });

    it('taking nothing describes the bucket without spending from it', () => {
      const { take, debtMs } = takeToken(1000, OAUTH, 0);
      assert.deepEqual([take.allowed, take.remaining, take.resetMs, debtMs], [true, 20, 1000, 1000]);
      assert.equal(takeToken(2000, OAUTH, 0).take.remaining, 0);
    });

    it('the per-address bucket holds 20 and gives one back every 3 seconds', () => {
      assert.deepEqual([ADDRESS.burst, 1000 / ADDRESS.perSecond], [20, 3000]);
      let debt = 0;
      for (let i = 0; i < 20; i++) debt = takeToken(debt, ADDRESS).debtMs;
      assert.equal(takeToken(debt, ADDRESS).take.retryAfterMs, 3000);
      assert.equal(takeToken(debt, ADDRESS).take.resetMs, 60_000);
    });

    it('memory buckets follow the service clock: 50 ms later an exhausted OAuth bucket admits one more request', () => {
      const clock = new ManualClock('2026-06-01T12:00:00Z');
      const buckets = createMemoryBuckets(clock);
      for (let i = 0; i < 40; i++) assert.equal(buckets.take('oauth_token', 'otk_1', OAUTH).allowed, true);
      assert.equal(buckets.take('oauth_token', 'otk_1', OAUTH).allowed, false);
      clock.advance(49);
      assert.equal(buckets.take('oauth_token', 'otk_1', OAUTH).allowed, false);
      clock.advance(1);
      const back = buckets.take('oauth_token', 'otk_1', OAUTH);
      assert.deepEqual([back.allowed, back.remaining], [true, 0]);
      assert.equal(buckets.take('oauth_token', 'otk_2', OAUTH).remaining, 39, 'another key has its own bucket');
    });
  });

  describe(`response headers (${store} store)`, () => {
    let server: TestServer;
    let organizationId: string;
    const suite = suiteScope();
    before(async () => {
      server = await startServer(suite, { env: limitsEnv() });
      organizationId = (await signUp(server)).organizationId;
    });

    it('a 200 describes the credential’s bucket: its burst, the whole tokens left and the seconds until it is full', async () => {
      const { token } = await oauthToken(server, organizationId);
      const response = await server.request('GET', '/v1/identity', { token });
      assert.equal(response.status, 200);
      assert.deepEqual(rateHeaders(response), { limit: 40, remaining: 39, reset: 1 });
    });

    it('a 429 is rate_limited in the error envelope, with Retry-After and the bucket’s headers', async () => {
      const { token } = await oauthToken(server, organizationId);
      const refused = await spendUntilRefused(server, token);
      const error = assertError(refused, 429, 'rate_limited');
      assert.match(error.message, /^This OAuth token may send 40 requests at once, refilled at 20 a second; retry in 1 s\.$/);
      assert.equal(refused.headers.get('retry-after'), '1');
      assert.deepEqual(rateHeaders(refused), { limit: 40, remaining: 0, reset: 2 });
    });

    it('a 403 for a known credential is charged to that credential, not to the address', async () => {
      const { token } = await oauthToken(server, organizationId);
      const response = await server.request('GET', '/v1/events', { token });
      assertError(response, 403, 'credential_kind_not_allowed');
      assert.deepEqual(rateHeaders(response), { limit: 40, remaining: 39, reset: 1 });
    });
  });

  describe(`unauthenticated traffic: 20 requests a minute per source address (${store} store)`, () => {
    it('the default is the spec’s 20 a minute, and a bad value names its variable', () => {
      assert.equal(loadConfig({}).rateLimitUnauthenticatedPerMinute, 20);
      assert.throws(
        () => loadConfig({ RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: 'lots' }),
        (error: Error) => error instanceof ConfigError && error.message.startsWith('RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '),
      );
    });

    it('a 401 describes the address’s bucket, and each failed authentication spends from it', async (t) => {
      const server = await startServer(t, { env: limitsEnv() });
      const startedAt = performance.now();
      const missing = await server.request('GET', '/v1/identity');
      assertError(missing, 401, 'credential_missing');
      assert.deepEqual(rateHeaders(missing), { limit: 20, remaining: 19, reset: 3 });
      const invalid = await server.request('GET', '/v1/identity', { token: 'cok_live_00000000000000000000000000000000' });
      assertError(invalid, 401, 'credential_invalid');
      assertBetween(rateHeaders(invalid).remaining, 18, 18 + refilledSince(startedAt, ADDRESS), 'remaining');
      const unknownRoute = await server.request('GET', '/v1/no-such-thing');
      assertError(unknownRoute, 404, 'route_not_found');
      assert.equal(rateHeaders(unknownRoute).limit, 20, 'an unknown path is unauthenticated traffic too');
    });

    it('/auth/login answers 20 requests from one address, then refuses with 429 and Retry-After', async (t) => {
      const server = await startServer(t, { env: limitsEnv() });
      const startedAt = performance.now();
      // The limit runs before validation, so bodies that fail it count the same as wrong passwords
      // and spare the test 20 password hashes.
      const body = { email: 'nobody@example.com' };
      const responses = await all(server, 25, 'POST', '/auth/login', { body });
      const admitted = responses.filter((response) => response.status !== 429);
      for (const response of admitted) assertError(response, 400, 'validation_failed');
      assertBetween(admitted.length, 20, 20 + refilledSince(startedAt, ADDRESS), 'attempts admitted');
      const refused = responses.find((response) => response.status === 429)!;
      assertError(refused, 429, 'rate_limited');
      assertBetween(Number(refused.headers.get('retry-after')), 1, 3, 'Retry-After');
      assert.equal(rateHeaders(refused).remaining, 0);
    });

    it('failed authentications on protected routes drain the address’s budget for /auth, but a valid credential is still served', async (t) => {
      const server = await startServer(t, { env: limitsEnv() });
      const startedAt = performance.now();
      const owner = await signUp(server);
      let last: ApiResponse | undefined;
      for (let i = 0; i < 19; i++) last = await server.request('GET', '/v1/identity', { token: `cok_live_${randomBytes(16).toString('hex')}` });
      assertBetween(rateHeaders(last!).remaining, 0, refilledSince(startedAt, ADDRESS), 'remaining');
      // On Redis, only while no token can have come back, with a second's margin for the requests below.
      if (refilledSince(startedAt - 1000, ADDRESS) === 0) {
        assertError(await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } }), 429, 'rate_limited');
        // Waiting would not fix a wrong credential, so it keeps its own answer rather than a 429.
        const stillWrong = await server.request('GET', '/v1/identity', { token: 'cok_live_00000000000000000000000000000000' });
        assertError(stillWrong, 401, 'credential_invalid');
        assert.equal(rateHeaders(stillWrong).remaining, 0);
      }
      const valid = await server.request('GET', '/v1/identity', { token: owner.token });
      assert.equal(valid.status, 200);
      assert.equal(rateHeaders(valid).limit, CREDENTIAL_BUCKETS.dashboard_token.burst);
    });

    it('health, readiness, the OpenAPI document and the error reference are never limited and spend nothing', async (t) => {
      const server = await startServer(t, { env: limitsEnv() });
      for (const path of ['/healthz', '/readyz', '/v1/openapi.json', '/docs/errors', '/docs/errors/rate_limited']) {
        for (const response of await all(server, 25, 'GET', path)) {
          assert.equal(response.status, 200, path);
          assert.equal(response.headers.get('x-ratelimit-limit'), null, path);
        }
      }
      assert.equal(rateHeaders(await server.request('GET', '/v1/identity')).remaining, 19);
    });

    it('only those public routes opt out, each in its access declaration', async (t) => {
      const server = await startServer(t);
      const exempt = server.app.accessTable.filter(({ access }) => access.public && access.rateLimit === false).map(({ url }) => url);
      // The sandbox stands in for the provider, which has no rate limit of ours: all of it is exempt.
      assert.ok(server.app.accessTable.filter(({ url }) => url.startsWith('/sandbox/')).every(({ url }) => exempt.includes(url)));
      const service = [...new Set(exempt.filter((url) => !url.startsWith('/sandbox/')))].sort();
      assert.deepEqual(service, [
        '/.well-known/oauth-authorization-server',
        '/.well-known/oauth-protected-resource/mcp',
        '/.well-known/oauth-protected-resource/v1',
        '/dashboard',
        '/dashboard/*',
        '/docs/errors',
        '/docs/errors/:code',
        '/healthz',
        '/provider/webhook',
        '/readyz',
        '/v1/openapi.json',
      ]);
    });
  });

  describe(`credential buckets (${store} store)`, () => {
    let server: TestServer;
    let owner: Awaited<ReturnType<typeof signUp>>;
    const suite = suiteScope();
    before(async () => {
      server = await startServer(suite, { env: limitsEnv() });
      owner = await signUp(server);
    });

    it('each credential kind has its burst: connection key 200, organization key 400, OAuth token 40, dashboard token 400', async () => {
      const connection = await createConnection(server, owner);
      const connectionKey = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
      const organizationKey = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      const { token: oauth } = await oauthToken(server, owner.organizationId);
      const login = await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } });
      const dashboard = login.body.token as string;
      for (const [token, burst] of [
        [connectionKey.key, 200],
        [organizationKey.key, 400],
        [oauth, 40],
        [dashboard, 400],
      ] as const) {
        const response = await server.request('GET', '/v1/identity', { token });
        assert.equal(response.status, 200);
        assert.equal(rateHeaders(response).limit, burst);
        assert.equal(rateHeaders(response).remaining, burst - 1);
      }
    });

    it('an OAuth token is served its burst of 40 at once, then refused', async () => {
      const { token } = await oauthToken(server, owner.organizationId);
      const startedAt = performance.now();
      const responses = await all(server, 60, 'GET', '/v1/identity', { token });
      const served = responses.filter((response) => response.status === 200).length;
      assertBetween(served, 40, 40 + refilledSince(startedAt, OAUTH), 'served');
      for (const response of responses.filter((r) => r.status !== 200)) assertError(response, 429, 'rate_limited');
    });

    it('two credentials have independent buckets', async () => {
      const spent = await oauthToken(server, owner.organizationId);
      const fresh = await oauthToken(server, owner.organizationId);
      await spendUntilRefused(server, spent.token);
      const other = await server.request('GET', '/v1/identity', { token: fresh.token });
      assert.equal(other.status, 200);
      assert.equal(rateHeaders(other).remaining, 39);
    });
  });

  describe(`credential buckets raised for benchmarks and load tests (${store} store)`, () => {
    it('RATE_LIMIT_CREDENTIAL_MULTIPLIER=10 serves an OAuth token 60 requests at once where the spec’s bucket stops at 40; the address bucket keeps its 20', async (t) => {
      const server = await startServer(t, { env: { ...limitsEnv(), RATE_LIMIT_CREDENTIAL_MULTIPLIER: '10' } });
      const owner = await signUp(server);
      const { token } = await oauthToken(server, owner.organizationId);
      const startedAt = performance.now();
      const responses = await all(server, 60, 'GET', '/v1/identity', { token });
      assert.deepEqual(
        responses.map((response) => response.status),
        responses.map(() => 200),
      );
      assert.equal(rateHeaders(responses[0]!).limit, 400);
      const left = Math.min(...responses.map((response) => rateHeaders(response).remaining));
      assertBetween(left, 340, 340 + refilledSince(startedAt, { burst: 400, perSecond: 200 }), 'remaining after 60');
      const organizationKey = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      assert.equal(rateHeaders(await server.request('GET', '/v1/identity', { token: organizationKey.key })).limit, 4000);
      assert.equal(rateHeaders(await server.request('GET', '/v1/identity')).limit, 20);
    });
  });

  describe('refill, on the memory store and the service clock', () => {
    let server: TestServer;
    const suite = suiteScope();
    before(async () => {
      server = await startServer(suite, { env: { RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '' } });
    });

    it('a refused OAuth token is served again 50 ms later, and has its whole burst back after 2 s', async () => {
      const owner = await signUp(server);
      const { token } = await oauthToken(server, owner.organizationId);
      await all(server, 40, 'GET', '/v1/identity', { token });
      assertError(await server.request('GET', '/v1/identity', { token }), 429, 'rate_limited');
      server.clock.advance(50);
      const oneBack = await server.request('GET', '/v1/identity', { token });
      assert.equal(oneBack.status, 200);
      assert.equal(rateHeaders(oneBack).remaining, 0);
      assertError(await server.request('GET', '/v1/identity', { token }), 429, 'rate_limited');
      server.clock.advance(2000);
      assert.deepEqual(rateHeaders(await server.request('GET', '/v1/identity', { token })), { limit: 40, remaining: 39, reset: 1 });
    });
  });

  describe('several processes', () => {
    if (redisUrl) {
      describe('with Redis (TEST_REDIS_URL)', () => {
        let redis: Redis;
        before(async () => {
          // An unreachable TEST_REDIS_URL fails here: these tests never quietly fall back to memory.
          redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2000 });
          assert.equal(await redis.ping(), 'PONG');
        });
        after(() => redis.quit());

        it('two servers on one Redis share one bucket per credential', async (t) => {
          const prefix = `${runId}-shared`;
          const first = await startServer(t, { env: limitsEnv(prefix) });
          const second = await startServer(t, { shareStore: first.testStore, env: limitsEnv(prefix) });
          const owner = await signUp(first);
          const { id, token } = await oauthToken(first, owner.organizationId);
          const startedAt = performance.now();
          const fromFirst = await all(first, 39, 'GET', '/v1/identity', { token });
          assert.ok(fromFirst.every((response) => response.status === 200));
          assert.equal(await redis.exists(`${prefix}:oauth_token:${id}`), 1, 'the bucket is a key in Redis');
          // A bucket of its own would leave the second server 39.
          const fromSecond = await second.request('GET', '/v1/identity', { token });
          assertBetween(rateHeaders(fromSecond).remaining, 0, refilledSince(startedAt, OAUTH), 'left for the second server');
          assertError(await spendUntilRefused(second, token), 429, 'rate_limited');
        });

        it('the Redis bucket refills on Redis’s clock, one token per interval', async () => {
          const buckets = await createRedisBuckets(redis, `${runId}-direct`);
          const policy = { burst: 10, perSecond: 5 };
          for (let i = 9; i >= 0; i--) assert.equal((await buckets.take('test', 'k', policy)).remaining, i);
          const refused = await buckets.take('test', 'k', policy);
          assert.equal(refused.allowed, false);
          assertBetween(refused.retryAfterMs, 1, 200, 'wait for one token');
          assertBetween(refused.resetMs, 1801, 2000, 'wait until full');
          assert.equal((await buckets.take('test', 'k', policy, 0)).remaining, 0, 'a look spends nothing');
          await waitFor(async () => (await buckets.take('test', 'k', policy, 0)).remaining > 0, { message: 'a token to come back' });
          const back = await buckets.take('test', 'k', policy);
          assert.deepEqual([back.allowed, back.remaining], [true, 0]);
          const pttl = await redis.pttl(`${runId}-direct:test:k`);
          assertBetween(pttl, 1800, 2000, 'the key lives exactly until the bucket is full');
        });
      });
    } else {
      it('without REDIS_URL each process keeps its own buckets in memory', async (t) => {
        const first = await startServer(t, { env: limitsEnv() });
        const second = await startServer(t, { shareStore: first.testStore, env: limitsEnv() });
        const owner = await signUp(first);
        const { token } = await oauthToken(first, owner.organizationId);
        await all(first, 40, 'GET', '/v1/identity', { token });
        assertError(await first.request('GET', '/v1/identity', { token }), 429, 'rate_limited');
        assert.equal(rateHeaders(await second.request('GET', '/v1/identity', { token })).remaining, 39);
      });
    }

    it('when Redis cannot be reached, each process limits with its own memory buckets and nothing fails with a 500', async (t) => {
      const server = await startServer(t, {
        env: { RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '', REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_KEY_PREFIX: `${runId}-down` },
      });
      const owner = await signUp(server);
      const { token } = await oauthToken(server, owner.organizationId);
      const responses = await all(server, 45, 'GET', '/v1/identity', { token });
      assert.equal(responses.filter((response) => response.status === 200).length, 40);
      assert.equal(responses.filter((response) => response.status === 429).length, 5);
      assert.deepEqual(rateHeaders(responses[0]!).limit, 40);
      assert.equal(rateHeaders(await server.request('GET', '/v1/identity')).limit, 20);
    });
  });
});
