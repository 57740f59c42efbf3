/**
 * The hot paths compile each query once, at both levels where a query can be compiled again:
 * - Kysely: a query built with Kysely on every call costs 5–25 µs of building and compiling before
 *   it runs; the hot sites are compiled once per shape (`compileOnce`, db/compiled-query.ts). A site
 *   written without it still works, and is found only by a profile: an inbound message's webhook
 *   row and a fan-out's delivery jobs were (docs/benchmarks.md, the eleventh pass).
 * - SQLite: a prepared statement is compiled again when it runs after a schema change, and for some
 *   SQL on every run: a bare `limit ?`, a parameter compared where a partial index has a constant
 *   (`status = ?` against `where status = 'enabled'`), `like ?`. That was 4 % of a conversations page
 *   (the tenth pass). The store reports every such compilation (`onRecompile`).
 * The paths every business runs all day go through a listening server, the sandbox provider and a
 * webhook receiver twice; the second round, which meets every query the first met, must compile none.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DefaultQueryCompiler } from 'kysely';
import { createConnection, createKey, inbound, newCustomer, settle, signUp } from './factories.ts';
import { startServer, suiteScope, usingPostgres, type TestServer } from './harness.ts';
import { startReceiver, type Receiver } from './receiver.ts';

describe('queries compiled once on the hot paths', () => {
  const suite = suiteScope();
  const recompiled: string[] = [];
  /** The service's call site of each query Kysely compiled during the second round. */
  const built: string[] = [];
  let server: TestServer;
  let receiver: Receiver;
  let key: string;
  let dashboardToken: string;
  let connection: Awaited<ReturnType<typeof createConnection>>;
  const compileQuery = DefaultQueryCompiler.prototype.compileQuery;

  before(async () => {
    server = await startServer(suite, usingPostgres ? {} : { onRecompile: (sql) => recompiled.push(sql) });
    receiver = await startReceiver(suite);
    const owner = await signUp(server);
    dashboardToken = owner.token;
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    connection = await createConnection(server, owner);
    const endpoint = await server.request('POST', '/v1/webhook-endpoints', { token: key, body: { url: receiver.url, events: ['*'] } });
    assert.equal(endpoint.status, 201, endpoint.text);
    await aRound();
    // The migrations change the schema between their own statements; the paths below change none.
    recompiled.length = 0;
    // Counts, and passes on: what Kysely compiles is unchanged.
    const countedCompile = function (this: DefaultQueryCompiler, ...args: Parameters<typeof compileQuery>) {
      built.push(callSiteOf(new Error().stack ?? ''));
      return compileQuery.apply(this, args);
    };
    DefaultQueryCompiler.prototype.compileQuery = countedCompile;
    try {
      await aRound();
    } finally {
      DefaultQueryCompiler.prototype.compileQuery = compileQuery;
    }
  });
  after(() => {
    DefaultQueryCompiler.prototype.compileQuery = compileQuery;
  });

  /** The day's work, once: customers write, the business answers, and every list is read. */
  async function aRound(): Promise<void> {
    const customers = [newCustomer(), newCustomer()];
    for (const from of customers) await inbound(server, connection, { from, text: 'Hello' });
    for (const to of customers) {
      const sent = await server.request('POST', '/v1/messages', {
        token: key,
        headers: { 'idempotency-key': `reply-${randomBytes(6).toString('hex')}` },
        body: { connection_id: connection.id, to: `+${to}`, type: 'text', text: { body: 'Hi! How can we help?' } },
      });
      assert.equal(sent.status, 201, sent.text);
    }
    await settle(server);
    for (const [path, token] of [
      ['/v1/identity', key],
      ['/v1/events?limit=25', dashboardToken],
      ['/v1/events?limit=10', dashboardToken],
      ['/v1/messages?limit=25', key],
      ['/v1/conversations?limit=25&expand=contact,last_message', key],
      ['/v1/conversations?limit=10&sort=recent&window=open', key],
      ['/v1/contacts?limit=25', key],
    ] as const) {
      const response = await server.request('GET', path, { token });
      assert.equal(response.status, 200, `${path}: ${response.text}`);
    }
  }

  it('builds no query with Kysely on a second round, but for a compiled site meeting a new shape', () => {
    assert.ok(receiver.received.length > 0, 'the webhooks reached the receiver');
    assert.ok(built.length > 0, 'the count sees what Kysely compiles');
    // Which shapes a round meets first depends on what earlier rounds left (a new contact's first
    // conversation, a contact seen before); a compiled site keeps each, at most 256 per site.
    const service = built.filter((site) => site !== 'compiled site' && site !== 'sandbox' && site !== 'test');
    assert.deepEqual(service, []);
  });

  it('compiles no SQLite statement again', { skip: usingPostgres && 'SQLite only: PostgreSQL plans each run afresh' }, () => {
    assert.deepEqual(recompiled, []);
  });
});

/**
 * Where in the service a query was compiled: the first frame of the service's code, or what
 * compiled it when that is not the service's request path (the sandbox provider, which stands in
 * for the upstream provider, and the test's own factories).
 */
function callSiteOf(stack: string): string {
  const frame = stack.split('\n').find((line) => line.includes('/src/'));
  if (!frame) return 'test';
  if (frame.includes('/src/db/compiled-query.ts')) return 'compiled site';
  if (frame.includes('/src/provider/sandbox/')) return 'sandbox';
  return frame.trim();
}
