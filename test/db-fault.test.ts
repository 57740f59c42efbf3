/**
 * The service when its PostgreSQL goes away under load. Two faults, each while writes stream in
 * (sends and contact creations, each with its Idempotency-Key) and the worker runs their jobs:
 * the database kills the service's connections (`pg_terminate_backend`, what a restart or a failover
 * does to them), and the database is unreachable for a few seconds behind a loopback proxy the test
 * cuts (connections dropped, new ones left unanswered, as a partition leaves them).
 *
 * Through either, every request is answered, with its work (201) or with a retryable
 * 503 `service_unavailable` and `Retry-After`, never a 500 nor a wait without end; the service serves
 * again within 5 s of the fault's end without being restarted; every key retried afterwards replays
 * its 201 or does its work then, exactly once; and once the worker has drained, no job is left
 * claimed or failed.
 *
 * PostgreSQL only: SQLite is a file inside the process, with no connection to lose.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { sql } from 'kysely';
import { MINUTE } from '../src/lib/clock.ts';
import { assertError, createConnection, createKey, inbound, newCustomer, settle, signUp } from './factories.ts';
import { createTestStore, startServer, usingPostgres, type ApiResponse, type Scope, type TestServer, type TestStore } from './harness.ts';
import { startReceiver } from './receiver.ts';
import { waitFor } from './wait.ts';

const WRITERS = 6;
/** Far longer than any answer takes, in a fault or not: a request still unanswered by then hung. */
const HANG_MS = 15_000;
/** The bound: the service serves again within this of the database's return. */
const RECOVERY_MS = 5_000;
const OUTAGE_MS = 3_000;
const CONNECT_TIMEOUT_MS = 1_000;
const KILL_ROUNDS = 4;

const skip = !usingPostgres && 'needs TEST_DATABASE_URL';

/** The store's database under an `application_name` of its own: how the test finds the service's connections. */
function named(url: URL, applicationName: string): URL {
  const named = new URL(url);
  named.searchParams.set('application_name', applicationName);
  return named;
}

interface DatabaseProxy {
  /** The store's database through the proxy. */
  url: URL;
  /** Drops every connection through the proxy, and holds new ones unanswered until `resume`. */
  cut(): void;
  /** Lets the held connections, and new ones, through to the database again. */
  resume(): void;
}

/** A loopback TCP proxy to the test store's database server, closed when `scope` ends. */
async function startDatabaseProxy(scope: Scope, store: TestStore): Promise<DatabaseProxy> {
  const target = new URL(store.databaseUrl!);
  const open = new Set<Socket>();
  const held = new Set<Socket>();
  let down = false;
  const forward = (client: Socket) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    const ends = [client, upstream];
    for (const end of ends) {
      open.add(end);
      end
        .on('error', () => undefined)
        .on('close', () => {
          for (const other of ends) {
            other.destroy();
            open.delete(other);
          }
        });
    }
    client.pipe(upstream).pipe(client);
  };
  // Paused until forwarded: what a held client sends waits for the database's return.
  const server = createServer({ pauseOnConnect: true }, (client) => {
    if (!down) return forward(client);
    held.add(client);
    client.on('error', () => undefined).on('close', () => held.delete(client));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  scope.after(async () => {
    for (const socket of [...open, ...held]) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('the proxy did not bind');
  const url = new URL(target);
  url.host = `127.0.0.1:${address.port}`;
  return {
    url,
    cut() {
      down = true;
      for (const socket of open) socket.destroy();
    },
    resume() {
      down = false;
      for (const client of held) forward(client);
      held.clear();
    },
  };
}

interface Service {
  server: TestServer;
  /** The test's own connections to the service's schema, which no fault touches. */
  direct: TestStore;
  apiKey: string;
  organizationId: string;
  connectionId: string;
  /** The customer every send goes to, inside the 24-hour window. */
  contactId: string;
}

/** A server on the test's store whose pool connects as `database` says, with an owner, a number, a customer and a webhook endpoint. */
async function startService(t: TestContext, direct: TestStore, database: { url: URL; connectTimeoutMs?: number }): Promise<Service> {
  const server = await startServer(t, {
    shareStore: direct,
    database: { ...database, url: database.url.toString() },
    // The load is many writes a second from one key: the limiter runs but must not refuse them.
    env: { RATE_LIMIT_CREDENTIAL_MULTIPLIER: '1000' },
  });
  const owner = await signUp(server);
  const apiKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  const connection = await createConnection(server, owner);
  const contactId = (await inbound(server, connection)).contact_id;
  // Each write's event is also a delivery to make: more jobs for the worker to run through the fault.
  const receiver = await startReceiver(t);
  const endpoint = await server.request('POST', '/v1/webhook-endpoints', {
    token: apiKey,
    body: { url: receiver.url, events: ['contact.created', 'message.status'] },
  });
  assert.equal(endpoint.status, 201, endpoint.text);
  server.app.worker.start();
  t.after(() => server.app.worker.stop(100));
  return { server, direct, apiKey, organizationId: owner.organizationId, connectionId: connection.id, contactId };
}

interface Write {
  key: string;
  path: '/v1/messages' | '/v1/contacts';
  body: Record<string, unknown>;
}

interface Sent {
  write: Write;
  /** `performance.now()` when it was sent and when its answer came. */
  sentAt: number;
  answeredAt?: number;
  answer?: ApiResponse;
  /** Why no answer came: the hang check's abort, or a connection the server dropped. */
  failure?: string;
}

function postWrite(service: Service, write: Write, signal?: AbortSignal): Promise<ApiResponse> {
  return service.server.request('POST', write.path, {
    token: service.apiKey,
    body: write.body,
    headers: { 'idempotency-key': write.key },
    ...(signal ? { signal } : {}),
  });
}

/** Writers that send without pause, each waiting for its answer, until `stop`: sends and contact creations in turn. */
function startWrites(service: Service) {
  const sent: Sent[] = [];
  let running = true;
  const run = randomBytes(3).toString('hex');
  function nextWrite(): Write {
    const index = sent.length;
    const key = `fault-${run}-${index}`;
    return index % 2 === 0
      ? { key, path: '/v1/messages', body: { connection_id: service.connectionId, contact_id: service.contactId, type: 'text', text: { body: key } } }
      : { key, path: '/v1/contacts', body: { phone_number: `+${newCustomer()}`, name: key } };
  }
  async function writer(): Promise<void> {
    while (running) {
      const entry: Sent = { write: nextWrite(), sentAt: performance.now() };
      sent.push(entry);
      try {
        entry.answer = await postWrite(service, entry.write, AbortSignal.timeout(HANG_MS));
      } catch (error) {
        entry.failure = String(error);
      }
      entry.answeredAt = performance.now();
    }
  }
  const writers = Array.from({ length: WRITERS }, writer);
  return {
    sent,
    /** How many writes sent at `since` or later have been answered with `status`. */
    answeredSince: (since: number, status: number) => sent.filter((entry) => entry.sentAt >= since && entry.answer?.status === status).length,
    async stop(): Promise<Sent[]> {
      running = false;
      await Promise.all(writers);
      return sent;
    },
  };
}

/** Every write was answered: with its work, or refused with a retryable 503 that says when to retry. */
function assertAnsweredWell(sent: Sent[]): void {
  for (const { write, answer, failure } of sent) {
    assert.ok(answer, `${write.key} got no answer: ${failure}`);
    if (answer.status === 201) continue;
    const error = assertError(answer, 503, 'service_unavailable');
    assert.equal(error.retryable, true, answer.text);
    assert.match(answer.headers.get('retry-after') ?? '', /^[1-9]\d*$/, `${write.key}: the 503 says when to retry`);
  }
}

/**
 * Every write sent again with its key: a 201 replays byte for byte, anything else does its work now,
 * and each key ends with exactly one message or contact, durably there.
 */
async function assertEachWriteOnce(service: Service, sent: Sent[]): Promise<void> {
  const keyOf = new Map<string, string>();
  for (let start = 0; start < sent.length; start += WRITERS) {
    await Promise.all(
      sent.slice(start, start + WRITERS).map(async ({ write, answer }) => {
        const retry = await postWrite(service, write);
        assert.equal(retry.status, 201, `${write.key}: ${retry.text}`);
        if (answer?.status === 201) {
          assert.equal(retry.headers.get('idempotency-replayed'), 'true', `${write.key} was answered 201, so its retry replays`);
          assert.equal(retry.text, answer.text, `${write.key}: the replay is the first answer`);
        }
        assert.ok(!keyOf.has(retry.body.id), `${write.key} answered with ${keyOf.get(retry.body.id)}'s ${retry.body.id}`);
        keyOf.set(retry.body.id, write.key);
      }),
    );
  }
  const { db } = service.direct.store;
  const messages = await db
    .selectFrom('messages')
    .select('id')
    .where('organization_id', '=', service.organizationId)
    .where('direction', '=', 'outbound')
    .execute();
  const contacts = await db
    .selectFrom('contacts')
    .select('id')
    .where('organization_id', '=', service.organizationId)
    .where('id', '!=', service.contactId)
    .execute();
  assert.deepEqual(new Set([...messages, ...contacts].map((row) => row.id)), new Set(keyOf.keys()), 'one message or contact per key, and no other');
}

/**
 * The worker carried on by itself: a message accepted once the database answers again leaves the
 * queue without help. Asked once the writers have stopped: while they write, the jobs they make may
 * outpace the worker on a busy machine, and the message would wait behind them for throughput, not
 * for the recovery this checks.
 */
async function assertWorkerResumed(service: Service, sent: Sent[], since: number): Promise<void> {
  const { db } = service.direct.store;
  // What the last look found, for the failure: the message's job, and the queue's jobs by status.
  let seen = 'no message accepted yet';
  await waitFor(
    async () => {
      const accepted = sent.find((entry) => entry.sentAt >= since && entry.write.path === '/v1/messages' && entry.answer?.status === 201);
      if (!accepted) return false;
      const id = accepted.answer!.body.id as string;
      const row = await db.selectFrom('messages').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      if (row.status !== 'queued') return true;
      const job = await db
        .selectFrom('jobs')
        .select(['status', 'attempts', 'run_at', 'last_error'])
        .where('name', '=', 'message.send')
        .where('payload', 'like', `%${id}%`)
        .executeTakeFirst();
      const queue = await db
        .selectFrom('jobs')
        .select(['status', (eb) => eb.fn.countAll<number>().as('count')])
        .groupBy('status')
        .execute();
      seen = `${id} queued; its job ${JSON.stringify(job)}; the queue ${JSON.stringify(queue)}`;
      return false;
    },
    { timeoutMs: HANG_MS, intervalMs: 20, message: () => `the running worker to send a message accepted after the fault (last seen: ${seen})` },
  );
}

/**
 * Once the worker stops and the queue is drained past every lease and first retry the fault could
 * have left, no job is running, failed, or due; and every send reached the provider.
 */
async function assertNoJobStranded(service: Service): Promise<void> {
  const { server } = service;
  await server.app.worker.stop(5_000);
  server.clock.advance(2 * MINUTE);
  await settle(server);
  const { db } = service.direct.store;
  const now = server.clock.now().toISOString();
  const jobs = await db.selectFrom('jobs').select(['id', 'name', 'status', 'run_at', 'last_error']).execute();
  const stranded = jobs.filter((job) => job.status === 'running' || job.status === 'failed' || (job.status === 'queued' && job.run_at <= now));
  assert.deepEqual(stranded, []);
  const unsent = await db
    .selectFrom('messages')
    .select(['id', 'status'])
    .where('organization_id', '=', service.organizationId)
    .where('status', 'in', ['queued', 'failed'])
    .execute();
  assert.deepEqual(unsent, []);
}

type Load = ReturnType<typeof startWrites>;

/**
 * Runs `scenario` while writers send, and stops them as soon as it ends, passed or failed: a test's
 * after-hooks run in the order they were registered, the shared store's first, so writers stopped
 * by an after-hook would still be sending while the store is dropped and the server closed under them.
 */
async function duringWrites(service: Service, scenario: (load: Load) => Promise<void>): Promise<Sent[]> {
  const load = startWrites(service);
  try {
    await scenario(load);
  } finally {
    await load.stop();
  }
  return load.sent;
}

describe('a database fault under load', () => {
  it('connections the database kills under load: every write is answered, the service recovers, nothing is lost', { skip }, async (t) => {
    const direct = await createTestStore(t);
    const applicationName = `dbfault_${randomBytes(6).toString('hex')}`;
    const service = await startService(t, direct, { url: named(new URL(direct.databaseUrl!), applicationName) });
    let lastKill = 0;
    const sent = await duringWrites(service, async (load) => {
      for (let round = 0; round < KILL_ROUNDS; round++) {
        // Killed again only once writes succeed again, so that each round finds the pool refilled and busy.
        await waitFor(() => load.answeredSince(lastKill, 201) >= WRITERS, { timeoutMs: HANG_MS, message: `writes to succeed again after kill ${round}` });
        // In the select list, so that only the rows the filter kept are killed: other files' connections share the database.
        const killed = await sql<{ killed: boolean }>`
          select pg_terminate_backend(pid) as killed from pg_stat_activity where application_name = ${applicationName}`.execute(direct.store.db);
        assert.ok(
          killed.rows.some((row) => row.killed),
          "the kill found the service's connections",
        );
        lastKill = performance.now();
      }
      await waitFor(() => load.answeredSince(lastKill, 201), { timeoutMs: RECOVERY_MS, message: 'a write to succeed within 5 s of the last kill' });
    });
    await assertWorkerResumed(service, sent, lastKill);

    assertAnsweredWell(sent);
    await assertEachWriteOnce(service, sent);
    await assertNoJobStranded(service);
  });

  it('the database unreachable for 3 s under load: writes are refused with 503 meanwhile, served within 5 s of its return, none lost', { skip }, async (t) => {
    const direct = await createTestStore(t);
    const proxy = await startDatabaseProxy(t, direct);
    // Shorter than the outage, so that the writes it holds up are answered while it lasts.
    const service = await startService(t, direct, { url: proxy.url, connectTimeoutMs: CONNECT_TIMEOUT_MS });
    let refusedDuringOutage = 0;
    let resumedAt = 0;
    const sent = await duringWrites(service, async (load) => {
      await waitFor(() => load.answeredSince(0, 201) >= WRITERS, { timeoutMs: HANG_MS, message: 'the writes to get going' });
      proxy.cut();
      const cutAt = performance.now();
      // The outage is the scenario: it lasts its time whatever the service does meanwhile.
      await delay(OUTAGE_MS);
      refusedDuringOutage = load.answeredSince(cutAt, 503);
      proxy.resume();
      resumedAt = performance.now();
      await waitFor(() => load.answeredSince(resumedAt, 201), { timeoutMs: RECOVERY_MS, message: 'a write to succeed within 5 s of the database’s return' });
    });
    await assertWorkerResumed(service, sent, resumedAt);

    assert.ok(refusedDuringOutage > 0, 'writes sent during the outage were refused while it lasted, not kept waiting for its end');
    assertAnsweredWell(sent);
    await assertEachWriteOnce(service, sent);
    await assertNoJobStranded(service);
  });
});
