/**
 * The hot paths compile each SQL statement once (SQLite). SQLite compiles a prepared statement again
 * when it runs after a schema change, and for some SQL on every run: a bare `limit ?`, a parameter
 * compared where a partial index has a constant (`status = ?` against `where status = 'enabled'`),
 * `like ?`. Each such run pays the statement's compilation again, which was 4 % of a conversations
 * page (docs/benchmarks.md, the tenth pass). The store reports every such compilation
 * (`onRecompile`); here the paths every business runs all day go through a listening server,
 * the sandbox provider and a webhook receiver, and none may report one.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { createConnection, createKey, inbound, newCustomer, settle, signUp } from './factories.ts';
import { startServer, suiteScope, usingPostgres, type TestServer } from './harness.ts';
import { startReceiver, type Receiver } from './receiver.ts';

describe('statements compiled once on the hot paths (SQLite)', { skip: usingPostgres && 'SQLite only: PostgreSQL plans each run afresh' }, () => {
  const suite = suiteScope();
  const recompiled: string[] = [];
  let server: TestServer;
  let receiver: Receiver;
  let key: string;
  let dashboardToken: string;
  let connection: Awaited<ReturnType<typeof createConnection>>;

  before(async () => {
    server = await startServer(suite, { onRecompile: (sql) => recompiled.push(sql) });
    receiver = await startReceiver(suite);
    const owner = await signUp(server);
    dashboardToken = owner.token;
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    connection = await createConnection(server, owner);
    const endpoint = await server.request('POST', '/v1/webhook-endpoints', { token: key, body: { url: receiver.url, events: ['*'] } });
    assert.equal(endpoint.status, 201, endpoint.text);
    // The migrations change the schema between their own statements; the paths below change none.
    recompiled.length = 0;
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

  it('sends, receives, delivers webhooks and reads pages without compiling any statement again', async () => {
    // Two rounds: the second meets every statement the first prepared, with new values.
    await aRound();
    await aRound();
    assert.ok(receiver.received.length > 0, 'the webhooks reached the receiver');
    assert.deepEqual(recompiled, []);
  });
});
