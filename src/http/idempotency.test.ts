import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { AppError } from '../lib/errors.ts';
import { DAY, ManualClock, SECOND } from '../lib/clock.ts';
import { SecretBox } from '../lib/crypto.ts';
import { newId } from '../lib/ids.ts';
import { assertNoRequestTransaction } from '../lib/transaction-scope.ts';
import type { Principal } from '../modules/credentials/principal.ts';
import { createIdempotencyKeysModule } from '../modules/idempotency-keys/index.ts';
import { registerAccessControl } from './access.ts';
import { registerWriteRequests } from './write-requests.ts';
import { createHttpServer, type HttpServer } from './server.ts';
import {
  connectAgain,
  createTestStore,
  startServer,
  suiteScope,
  usingPostgres,
  type ApiResponse,
  type Scope,
  type TestServer,
  type TestStore,
} from '../../test/harness.ts';
import { waitFor } from '../../test/wait.ts';
import { assertError, createKey, signUp } from '../../test/factories.ts';

const ORGANIZATION_KEY = { kind: 'organization', mode: 'live' } as const;

function newKey(): string {
  return `idem-${randomBytes(8).toString('hex')}`;
}

function post(server: TestServer, path: string, token: string, key: string | undefined, body?: unknown) {
  return server.request('POST', path, { token, body, headers: key === undefined ? {} : { 'idempotency-key': key } });
}

async function countKeys(server: TestServer, token: string): Promise<number> {
  const list = await server.request('GET', '/v1/api-keys?limit=100', { token });
  assert.equal(list.status, 200, list.text);
  return list.body.data.length;
}

function isReplay(response: ApiResponse): boolean {
  return response.headers.get('idempotency-replayed') === 'true';
}

/** Fires identical requests all at once, and checks that exactly one of them acted. */
async function assertExactlyOneActs(responses: ApiResponse[]): Promise<void> {
  const originals = responses.filter((r) => r.status === 201 && !isReplay(r));
  const replays = responses.filter((r) => r.status === 201 && isReplay(r));
  const inFlight = responses.filter((r) => r.status === 409);
  assert.equal(originals.length, 1, `one original response, got ${originals.length}`);
  assert.equal(originals.length + replays.length + inFlight.length, responses.length, responses.map((r) => r.status).join(','));
  for (const replay of replays) assert.equal(replay.text, originals[0]!.text);
  for (const busy of inFlight) {
    assertError(busy, 409, 'idempotency_key_in_flight');
    assert.equal(busy.headers.get('retry-after'), '1');
  }
}

describe('idempotency keys on side-effecting POSTs', () => {
  let server: TestServer;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
  });

  describe('replays', () => {
    it('a retry with the same key and body returns the original status and body, marked replayed, and creates nothing', async () => {
      const owner = await signUp(server);
      const key = newKey();
      const first = await post(server, '/v1/api-keys', owner.token, key, ORGANIZATION_KEY);
      assert.equal(first.status, 201, first.text);
      assert.equal(first.headers.get('idempotency-replayed'), null);

      const retry = await post(server, '/v1/api-keys', owner.token, key, ORGANIZATION_KEY);
      assert.equal(retry.status, 201);
      assert.equal(retry.headers.get('idempotency-replayed'), 'true');
      assert.equal(retry.text, first.text);
      assert.match(retry.headers.get('content-type') ?? '', /application\/json/);
      assert.equal(await countKeys(server, owner.token), 1);
    });

    it('the same body with its keys in another order is a replay, not a reuse', async () => {
      const owner = await signUp(server);
      const key = newKey();
      const first = await post(server, '/v1/api-keys', owner.token, key, {
        kind: 'organization',
        mode: 'live',
        name: 'CI',
        metadata: { a: 1, b: { c: 2, d: 3 } },
      });
      assert.equal(first.status, 201, first.text);
      const retry = await post(server, '/v1/api-keys', owner.token, key, {
        metadata: { b: { d: 3, c: 2 }, a: 1 },
        name: 'CI',
        mode: 'live',
        kind: 'organization',
      });
      assert.equal(retry.status, 201, retry.text);
      assert.ok(isReplay(retry));
      assert.equal(retry.body.id, first.body.id);
      assert.equal(await countKeys(server, owner.token), 1);
    });

    it('a final error from the handler is stored and replayed like a success', async () => {
      const owner = await signUp(server);
      const target = await createKey(server, owner.token, ORGANIZATION_KEY);
      assert.equal((await post(server, `/v1/api-keys/${target.id}/revoke`, owner.token, undefined)).status, 200);
      const key = newKey();
      const refused = assertError(await post(server, `/v1/api-keys/${target.id}/revoke`, owner.token, key), 409, 'invalid_state');
      const retry = await post(server, `/v1/api-keys/${target.id}/revoke`, owner.token, key);
      assert.equal(retry.status, 409);
      assert.ok(isReplay(retry));
      assert.equal(retry.body.error.request_id, refused.request_id, 'the body is the original one, request id included');
    });

    it('without a key every POST acts: the header is optional by default', async () => {
      const owner = await signUp(server);
      assert.equal((await post(server, '/v1/api-keys', owner.token, undefined, ORGANIZATION_KEY)).status, 201);
      assert.equal((await post(server, '/v1/api-keys', owner.token, undefined, ORGANIZATION_KEY)).status, 201);
      assert.equal(await countKeys(server, owner.token), 2);
    });

    it('a stored response is sealed: the secret it carries is not readable in the table', async () => {
      const owner = await signUp(server);
      const created = await post(server, '/v1/api-keys', owner.token, newKey(), ORGANIZATION_KEY);
      assert.equal(created.status, 201);
      const rows = await server.app.store.db.selectFrom('idempotency_keys').selectAll().where('organization_id', '=', owner.organizationId).execute();
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.response_status, 201);
      assert.ok(rows[0]!.response_body);
      assert.ok(!rows[0]!.response_body.includes(created.body.key));
      assert.ok(!rows[0]!.response_body.includes(created.body.id));
    });
  });

  describe('refusals', () => {
    it('the same key with a different body is refused with idempotency_key_reuse naming the key', async () => {
      const owner = await signUp(server);
      const key = newKey();
      assert.equal((await post(server, '/v1/api-keys', owner.token, key, ORGANIZATION_KEY)).status, 201);
      const error = assertError(await post(server, '/v1/api-keys', owner.token, key, { kind: 'organization', mode: 'test' }), 422, 'idempotency_key_reuse');
      assert.equal(error.type, 'idempotency_error');
      assert.equal(error.idempotency_key, key);
      assert.equal(await countKeys(server, owner.token), 1);
    });

    it('the same key on another path is a reuse too: the path is part of the request hash', async () => {
      const owner = await signUp(server);
      const [a, b] = [await createKey(server, owner.token, ORGANIZATION_KEY), await createKey(server, owner.token, ORGANIZATION_KEY)];
      const key = newKey();
      assert.equal((await post(server, `/v1/api-keys/${a.id}/revoke`, owner.token, key)).status, 200);
      assertError(await post(server, `/v1/api-keys/${b.id}/revoke`, owner.token, key), 422, 'idempotency_key_reuse');
      const list = await server.request('GET', '/v1/api-keys?status=active', { token: owner.token });
      assert.deepEqual(
        list.body.data.map((k: { id: string }) => k.id),
        [b.id],
      );
    });

    it('a key longer than 255 characters is refused with idempotency_key_invalid; 255 is accepted', async () => {
      const owner = await signUp(server);
      const error = assertError(await post(server, '/v1/api-keys', owner.token, 'k'.repeat(256), ORGANIZATION_KEY), 400, 'idempotency_key_invalid');
      assert.equal(error.param, '/header/idempotency-key');
      assert.equal((await post(server, '/v1/api-keys', owner.token, 'k'.repeat(255), ORGANIZATION_KEY)).status, 201);
      assert.equal(await countKeys(server, owner.token), 1);
    });

    it('an empty key is refused with idempotency_key_invalid', async () => {
      const owner = await signUp(server);
      assertError(await post(server, '/v1/api-keys', owner.token, '', ORGANIZATION_KEY), 400, 'idempotency_key_invalid');
      assert.equal(await countKeys(server, owner.token), 0);
    });

    it('a request that fails validation stores nothing: the same key then works with a valid body', async () => {
      const owner = await signUp(server);
      const key = newKey();
      assertError(await post(server, '/v1/api-keys', owner.token, key, { kind: 'organization', mode: 'staging' }), 400, 'validation_failed');
      const valid = await post(server, '/v1/api-keys', owner.token, key, ORGANIZATION_KEY);
      assert.equal(valid.status, 201, valid.text);
      assert.ok(!isReplay(valid));
    });

    it('a validation failure raised by the service after the schema passed stores nothing either', async () => {
      const owner = await signUp(server);
      const key = newKey();
      const body = { ...ORGANIZATION_KEY, connection_id: newId('connection') };
      assertError(await post(server, '/v1/api-keys', owner.token, key, body), 400, 'validation_failed');
      const valid = await post(server, '/v1/api-keys', owner.token, key, ORGANIZATION_KEY);
      assert.equal(valid.status, 201, valid.text);
      assert.ok(!isReplay(valid));
    });

    it('a request refused for a missing scope stores nothing', async () => {
      const owner = await signUp(server);
      const target = await createKey(server, owner.token, ORGANIZATION_KEY);
      const withoutScope = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['messages:read'] });
      const withScope = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['keys:write'] });
      const key = newKey();
      assertError(await post(server, `/v1/api-keys/${target.id}/revoke`, withoutScope.key, key), 403, 'scope_missing');
      const revoked = await post(server, `/v1/api-keys/${target.id}/revoke`, withScope.key, key);
      assert.equal(revoked.status, 200, revoked.text);
      assert.ok(!isReplay(revoked));
    });
  });

  describe('scoping', () => {
    it('the same key in two organizations is two independent keys', async () => {
      const [acme, globex] = [await signUp(server), await signUp(server, { organizationName: 'Globex' })];
      const key = newKey();
      const a = await post(server, '/v1/api-keys', acme.token, key, ORGANIZATION_KEY);
      const b = await post(server, '/v1/api-keys', globex.token, key, ORGANIZATION_KEY);
      assert.equal(a.status, 201);
      assert.equal(b.status, 201);
      assert.ok(!isReplay(b));
      assert.notEqual(a.body.id, b.body.id);
      assert.equal(await countKeys(server, acme.token), 1);
      assert.equal(await countKeys(server, globex.token), 1);
    });

    it('the same key in test and live mode is two independent keys', async () => {
      const owner = await signUp(server);
      const live = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['keys:write'] });
      const test = await createKey(server, owner.token, { kind: 'organization', mode: 'test', scopes: ['keys:write'] });
      // Key management stays within its mode: each credential revokes a key of its own mode.
      const [a, b] = [await createKey(server, owner.token, ORGANIZATION_KEY), await createKey(server, owner.token, { kind: 'organization', mode: 'test' })];
      const key = newKey();
      // Shared, the key's second use (another path) would be a reuse; scoped by mode, each acts.
      const inLive = await post(server, `/v1/api-keys/${a.id}/revoke`, live.key, key);
      const inTest = await post(server, `/v1/api-keys/${b.id}/revoke`, test.key, key);
      assert.equal(inLive.status, 200, inLive.text);
      assert.equal(inTest.status, 200, inTest.text);
      assert.ok(!isReplay(inTest));
      const [liveRetry, testRetry] = [
        await post(server, `/v1/api-keys/${a.id}/revoke`, live.key, key),
        await post(server, `/v1/api-keys/${b.id}/revoke`, test.key, key),
      ];
      assert.ok(isReplay(liveRetry) && isReplay(testRetry));
      assert.equal(liveRetry.body.id, a.id);
      assert.equal(testRetry.body.id, b.id);
    });

    it('a dashboard token, which carries no mode, shares the live scope', async () => {
      const owner = await signUp(server);
      const live = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['keys:write'] });
      const target = await createKey(server, owner.token, ORGANIZATION_KEY);
      const key = newKey();
      assert.equal((await post(server, `/v1/api-keys/${target.id}/revoke`, owner.token, key)).status, 200);
      const retry = await post(server, `/v1/api-keys/${target.id}/revoke`, live.key, key);
      assert.equal(retry.status, 200, retry.text);
      assert.ok(isReplay(retry));
    });
  });

  describe('time', () => {
    it('a key is kept 24 hours: replayed just before, and a fresh key from then on', async () => {
      const owner = await signUp(server);
      const key = newKey();
      const first = await post(server, '/v1/api-keys', owner.token, key, ORGANIZATION_KEY);
      assert.equal(first.status, 201);

      server.clock.advance(DAY - SECOND);
      let login = await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } });
      const replay = await post(server, '/v1/api-keys', login.body.token, key, ORGANIZATION_KEY);
      assert.equal(replay.status, 201);
      assert.ok(isReplay(replay));

      server.clock.advance(SECOND);
      login = await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } });
      const fresh = await post(server, '/v1/api-keys', login.body.token, key, ORGANIZATION_KEY);
      assert.equal(fresh.status, 201);
      assert.ok(!isReplay(fresh));
      assert.notEqual(fresh.body.id, first.body.id);
      assert.equal(await countKeys(server, login.body.token), 2);
    });
  });

  describe('concurrency', () => {
    it('50 concurrent identical requests with one key create exactly one API key', async () => {
      const owner = await signUp(server);
      const key = newKey();
      const responses = await Promise.all(Array.from({ length: 50 }, () => post(server, '/v1/api-keys', owner.token, key, ORGANIZATION_KEY)));
      await assertExactlyOneActs(responses);
      assert.equal(await countKeys(server, owner.token), 1);
      assert.ok(isReplay(await post(server, '/v1/api-keys', owner.token, key, ORGANIZATION_KEY)));
    });

    it(
      '50 concurrent identical requests spread over two servers on one PostgreSQL create exactly one API key',
      { skip: !usingPostgres && 'needs TEST_DATABASE_URL' },
      async (t) => {
        // One clock for both, as two machines kept in sync would have: the lock timeout assumes that.
        const second = await startServer(t, { shareStore: server.testStore, clock: server.clock });
        const owner = await signUp(server);
        const key = newKey();
        const responses = await Promise.all(
          Array.from({ length: 50 }, (_, i) => post(i % 2 === 0 ? server : second, '/v1/api-keys', owner.token, key, ORGANIZATION_KEY)),
        );
        await assertExactlyOneActs(responses);
        assert.equal(await countKeys(server, owner.token), 1);
        assert.equal(await countKeys(second, owner.token), 1);
      },
    );
  });
});

/**
 * The hooks on a bare server (the real server, access control and idempotency layer, with a stand-in
 * credential check), so that routes the product does not have yet can declare what send endpoints
 * will: a required key, a handler that fails, a handler that is slow.
 */
describe('idempotency route declarations and failures', () => {
  const principal = (organizationId: string): Principal => ({
    kind: 'organization_key',
    credentialId: 'key_test',
    organizationId,
    memberId: null,
    role: null,
    mode: 'live',
    connectionId: null,
    scopes: new Set(),
  });

  const organizationId = newId('organization');
  const clock = new ManualClock('2026-06-01T12:00:00.000Z');
  let testStore: TestStore;

  const suite = suiteScope();
  before(async () => {
    testStore = await createTestStore(suite);
  });

  /** The bare server, closed when `scope` ends. */
  async function bareServer(scope: Scope, register: (app: HttpServer) => void) {
    const app = createHttpServer({
      publicBaseUrl: 'http://localhost:3000',
      logLevel: 'silent',
      trustProxy: false,
      isUnavailable: testStore.store.dialect.isUnavailable,
    });
    scope.after(() => app.close());
    registerAccessControl(
      app,
      async (bearer) => {
        if (bearer !== 'good') throw new AppError('credential_invalid');
        return principal(organizationId);
      },
      { v1Resource: 'http://localhost:3000/v1' },
    );
    const { service } = createIdempotencyKeysModule({
      db: testStore.store.db,
      clock,
      isUniqueViolation: testStore.store.dialect.isUniqueViolation,
      secrets: new SecretBox(randomBytes(32)),
    });
    registerWriteRequests(app, { gate: service, openTransaction: testStore.store.openRequestTransaction, publicBaseUrl: 'http://localhost:3000' });
    register(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    if (!address || typeof address === 'string') throw new Error('no port');
    const url = `http://127.0.0.1:${address.port}`;
    return {
      async post(path: string, key?: string): Promise<ApiResponse> {
        const headers: Record<string, string> = { authorization: 'Bearer good', 'content-type': 'application/json' };
        if (key !== undefined) headers['idempotency-key'] = key;
        const response = await fetch(url + path, { method: 'POST', headers, body: '{}' });
        const text = await response.text();
        return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text };
      },
    };
  }

  it('a route that requires the key refuses a request without one with idempotency_key_required', async (t) => {
    let runs = 0;
    const bare = await bareServer(t, (app) => {
      app.post('/v1/sends', {
        config: { access: { scope: null }, idempotency: 'required' },
        handler: async (_request, reply) => reply.code(201).send({ run: ++runs }),
      });
    });
    const error = assertError(await bare.post('/v1/sends'), 400, 'idempotency_key_required');
    assert.equal(error.type, 'idempotency_error');
    assert.equal(runs, 0);
    assert.equal((await bare.post('/v1/sends', newKey())).status, 201);
  });

  it('a 5xx releases the key, so the retry runs again and its success is what replays', async (t) => {
    let runs = 0;
    const bare = await bareServer(t, (app) => {
      app.post('/v1/flaky', {
        config: { access: { scope: null } },
        handler: async (_request, reply) => {
          runs += 1;
          if (runs === 1) throw new Error('the store went away');
          return reply.code(201).send({ run: runs });
        },
      });
    });
    const key = newKey();
    assertError(await bare.post('/v1/flaky', key), 500, 'internal_error');
    const retry = await bare.post('/v1/flaky', key);
    assert.equal(retry.status, 201);
    assert.ok(!isReplay(retry));
    const replay = await bare.post('/v1/flaky', key);
    assert.ok(isReplay(replay));
    assert.deepEqual(replay.body, { run: 2 });
    assert.equal(runs, 2);
  });

  it('a retryable error releases the key: a stored "try again later" would never let the retry succeed', async (t) => {
    let runs = 0;
    const bare = await bareServer(t, (app) => {
      app.post('/v1/locked', {
        config: { access: { scope: null } },
        handler: async () => {
          runs += 1;
          if (runs === 1) throw new AppError('conversation_locked');
          return { run: runs };
        },
      });
    });
    const key = newKey();
    assertError(await bare.post('/v1/locked', key), 409, 'conversation_locked');
    const retry = await bare.post('/v1/locked', key);
    assert.equal(retry.status, 200);
    assert.ok(!isReplay(retry));
  });

  it('on a route that calls out, a retry while the first runs is idempotency_key_in_flight; after the 60 s lock timeout it takes the key over', async (t) => {
    const gates: Array<() => void> = [];
    let runs = 0;
    const bare = await bareServer(t, (app) => {
      app.post('/v1/slow', {
        config: { access: { scope: null }, waitsOnNetwork: true },
        handler: async (_request, reply) => {
          const run = ++runs;
          if (run === 1) await new Promise<void>((resolve) => gates.push(resolve));
          return reply.code(201).send({ run });
        },
      });
    });
    const key = newKey();
    const first = bare.post('/v1/slow', key);
    await waitFor(() => runs > 0, { message: 'the first request to reach its handler' });

    const busy = assertError(await bare.post('/v1/slow', key), 409, 'idempotency_key_in_flight');
    assert.equal(busy.idempotency_key, key);

    // The first execution looks dead (its process would have crashed): the next retry takes over.
    clock.advance(60 * SECOND);
    const takenOver = await bare.post('/v1/slow', key);
    assert.equal(takenOver.status, 201);
    assert.deepEqual(takenOver.body, { run: 2 });

    // The overtaken execution still answers its own client, but the key keeps its successor's answer.
    gates[0]!();
    assert.deepEqual((await first).body, { run: 1 });
    const replay = await bare.post('/v1/slow', key);
    assert.ok(isReplay(replay));
    assert.deepEqual(replay.body, { run: 2 });
  });

  describe('one transaction per write request', () => {
    const scratch = () => testStore.store.db as unknown as Kysely<{ write_request_scratch: { id: string; run: number } }>;
    before(async () => {
      await sql`create table write_request_scratch (id text primary key, run integer not null)`.execute(testStore.store.db);
    });
    const rowsOf = async (id: string) =>
      (await scratch().selectFrom('write_request_scratch').select('run').where('id', '=', id).execute()).map((row) => row.run);

    it('an error after a write keeps nothing of it; a success keeps everything', async (t) => {
      const bare = await bareServer(t, (app) => {
        app.post('/v1/writes/:id', {
          config: { access: { scope: null } },
          handler: async (request, reply) => {
            const { id } = request.params as { id: string };
            await scratch().insertInto('write_request_scratch').values({ id, run: 1 }).execute();
            // A service's own transaction joins the request's: it is kept or undone with the rest.
            await scratch()
              .transaction()
              .execute((trx) =>
                trx
                  .insertInto('write_request_scratch')
                  .values({ id: `${id}-nested`, run: 1 })
                  .execute(),
              );
            if (id.startsWith('fail')) throw new AppError('resource_not_found', 'refused after writing');
            return reply.code(201).send({ id });
          },
        });
      });
      assertError(await bare.post('/v1/writes/fail-1'), 404, 'resource_not_found');
      assert.deepEqual(await rowsOf('fail-1'), []);
      assert.deepEqual(await rowsOf('fail-1-nested'), []);
      assert.equal((await bare.post('/v1/writes/ok-1', newKey())).status, 201);
      assert.deepEqual(await rowsOf('ok-1'), [1]);
      assert.deepEqual(await rowsOf('ok-1-nested'), [1]);
    });

    it("a service's own transaction that fails and is caught undoes only its part", async (t) => {
      const bare = await bareServer(t, (app) => {
        app.post('/v1/partial', {
          config: { access: { scope: null } },
          handler: async (_request, reply) => {
            await scratch().insertInto('write_request_scratch').values({ id: 'partial-kept', run: 1 }).execute();
            await scratch()
              .transaction()
              .execute(async (trx) => {
                await trx.insertInto('write_request_scratch').values({ id: 'partial-undone', run: 1 }).execute();
                // A unique violation: on PostgreSQL it would poison the request's transaction but for the savepoint.
                await trx.insertInto('write_request_scratch').values({ id: 'partial-kept', run: 2 }).execute();
              })
              .catch(() => undefined);
            return reply.code(201).send({});
          },
        });
      });
      assert.equal((await bare.post('/v1/partial')).status, 201);
      assert.deepEqual(await rowsOf('partial-kept'), [1]);
      assert.deepEqual(await rowsOf('partial-undone'), []);
    });

    it('two concurrent first requests with one key: one execution survives, and both answer with it', async (t) => {
      let runs = 0;
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const key = newKey();
      const bare = await bareServer(t, (app) => {
        app.post('/v1/raced', {
          config: { access: { scope: null } },
          handler: async (_request, reply) => {
            const run = ++runs;
            await scratch()
              .insertInto('write_request_scratch')
              .values({ id: `raced-${run}`, run })
              .execute();
            if (run === 1) await gate;
            return reply.code(201).send({ run });
          },
        });
      });
      const first = bare.post('/v1/raced', key);
      await waitFor(() => runs >= 1, { message: 'the first request to reach its handler' });
      const second = bare.post('/v1/raced', key);
      // On PostgreSQL the second runs beside the first, and whichever answers second meets the other's
      // key; on SQLite it waits for the first's transaction to end, and finds the answer.
      if (usingPostgres) await waitFor(() => runs >= 2, { message: 'the second request to reach its handler' });
      release();
      const answers = [await first, await second];
      for (const answer of answers) assert.equal(answer.status, 201, answer.text);
      assert.equal(answers.filter(isReplay).length, 1);
      assert.equal(answers[0]!.text, answers[1]!.text);
      // Whichever committed first (on PostgreSQL the second may, the first being held) is the one kept.
      const kept = await scratch().selectFrom('write_request_scratch').select('run').where('id', 'like', 'raced-%').execute();
      assert.deepEqual(
        kept.map((row) => row.run),
        [answers[0]!.body.run],
        "the other execution's work rolled back",
      );
    });

    it(
      'a request whose connection the database ends answers 503 in the envelope, keeps nothing, and leaves its key free',
      { skip: !usingPostgres && 'needs TEST_DATABASE_URL' },
      async (t) => {
        const outside = connectAgain(t, testStore).store.db;
        let runs = 0;
        const bare = await bareServer(t, (app) => {
          app.post('/v1/cut-off', {
            config: { access: { scope: null } },
            handler: async (_request, reply) => {
              const run = ++runs;
              await scratch()
                .insertInto('write_request_scratch')
                .values({ id: `cut-off-${run}`, run })
                .execute();
              if (run === 1) {
                const { pid } = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(scratch())).rows[0]!;
                await sql`select pg_terminate_backend(${pid})`.execute(outside);
                await waitFor(async () => (await sql`select 1 from pg_stat_activity where pid = ${pid}`.execute(outside)).rows.length === 0, {
                  message: "the request's backend to end",
                });
                // The request's next statement finds its connection gone; the rollback after it, too.
                await scratch().insertInto('write_request_scratch').values({ id: 'cut-off-never', run }).execute();
              }
              return reply.code(201).send({ run });
            },
          });
        });
        const key = newKey();
        const failed = await bare.post('/v1/cut-off', key);
        assert.equal(assertError(failed, 503, 'service_unavailable').retryable, true);
        assert.deepEqual(await rowsOf('cut-off-1'), []);
        const retry = await bare.post('/v1/cut-off', key);
        assert.equal(retry.status, 201, retry.text);
        assert.ok(!isReplay(retry));
        assert.deepEqual(await rowsOf('cut-off-2'), [2]);
      },
    );

    it('a write route that calls out without declaring waitsOnNetwork fails, and one that declares it works', async (t) => {
      const bare = await bareServer(t, (app) => {
        app.post('/v1/calls-out', { config: { access: { scope: null } }, handler: async () => (assertNoRequestTransaction('a remote service'), {}) });
        app.post('/v1/declared', {
          config: { access: { scope: null }, waitsOnNetwork: true },
          handler: async () => (assertNoRequestTransaction('a remote service'), {}),
        });
      });
      assertError(await bare.post('/v1/calls-out'), 500, 'internal_error');
      assert.equal((await bare.post('/v1/declared')).status, 200);
    });
  });

  it('a GET or public route that declares idempotency fails at start-up', async (t) => {
    await assert.rejects(
      bareServer(t, (app) => {
        app.get('/v1/reads', { config: { access: { scope: null }, idempotency: 'required' }, handler: async () => ({}) });
      }),
      /declares idempotency/,
    );
    await assert.rejects(
      bareServer(t, (app) => {
        app.post('/auth/open', { config: { access: { public: true, reason: 'test' }, idempotency: 'optional' }, handler: async () => ({}) });
      }),
      /declares idempotency/,
    );
  });
});
