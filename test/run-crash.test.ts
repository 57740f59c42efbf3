/**
 * Runs across a worker crash: a separate worker process (the real `src/main.ts` with ROLE=worker)
 * executes the runs of an automation that sends several messages in a row, and is killed with
 * SIGKILL part-way through. The test's own server then takes over what the dead worker left (its
 * queued jobs, and those it held once their lease has run out): every run must complete, and every
 * message must be filed once and reach the provider once, wherever the kill cut.
 *
 * Two places to cut: the moment the provider takes one of the worker's sends (so that send's answer
 * is lost with the worker), and a moment picked only by how many messages the runs have filed (so
 * the worker may die inside a step's transaction, or after its commit and before its job is
 * settled). Each kill point is drawn at random within its range and reported.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { before, describe, it, type TestContext } from 'node:test';
import { messageSend, runStep } from '../src/jobs/catalog.ts';
import { ManualClock, SECOND } from '../src/lib/clock.ts';
import { createConnection, createKey, newCustomer, settle, signUp } from './factories.ts';
import { startServer, suiteScope, type TestServer } from './harness.ts';
import { spawnService, storeEnv, type ServiceProcess } from './service-process.ts';
import { waitFor } from './wait.ts';

type Json = Record<string, any>;

/** Customers writing in at once: one run each. */
const RUNS = 16;
const SENDS = 5;
/** The dead worker's lease: how far the test's clock moves before its jobs may be taken over. */
const LEASE_MS = 10 * SECOND;
/** Kill points are drawn up to here, so that a good part of the work is always left to recover. */
const LATEST_KILL = Math.floor((RUNS * SENDS * 2) / 3);

const sendStep = (index: number) => ({
  id: `send_${index}`,
  type: 'send_message',
  text: `Message ${index} for {{ contact.profile_name }}: {{ message.text.body }}`,
  next: index < SENDS ? `send_${index + 1}` : 'done',
});
/** Five messages in a row, then the end: six steps, each its own `run.step` job. */
const definition = {
  trigger: { type: 'message_received' },
  start: 'send_1',
  steps: [...Array.from({ length: SENDS }, (_, i) => sendStep(i + 1)), { id: 'done', type: 'end' }],
};

interface Crash {
  /** What the kill point was, for the report. */
  killedAt: string;
  /** Asserts what the kill must have left held by the dead worker, given the jobs it held. */
  check?(held: { name: string }[], unfinished: { name: string; status: string }[]): void;
}

/**
 * A suite of its own server (each starts with its manual clock on the real time, which the recovery
 * moves ahead), an automation on a number of its own, and one crash: `kill` gets the running worker,
 * must see it killed with SIGKILL, and says where.
 */
function crashSuite(title: string, kill: (worker: ServiceProcess, server: TestServer, connection: { id: string; phone_number_id: string }) => Promise<Crash>) {
  describe(title, () => {
    let server: TestServer;
    let key: string;
    let connection: { id: string; phone_number_id: string };
    let automationId: string;

    const suite = suiteScope();
    before(async () => {
      // The worker process runs on the real clock, so what the test's server queues must be due by it.
      server = await startServer(suite, { clock: new ManualClock(Date.now()) });
      const owner = await signUp(server);
      key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
      connection = await createConnection(server, { token: key });
      const sync = await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: key });
      assert.equal(sync.status, 200, sync.text);
      await settle(server);
      const created = await server.request('POST', '/v1/automations', {
        token: key,
        body: { name: 'Five in a row', connection_id: connection.id, definition },
      });
      assert.equal(created.status, 201, created.text);
      automationId = created.body.id;
      const deployed = await server.request('POST', `/v1/automations/${automationId}/deploy`, { token: key, body: { version: 1 } });
      assert.equal(deployed.status, 200, deployed.text);
      const enabled = await server.request('POST', `/v1/automations/${automationId}/enable`, { token: key });
      assert.equal(enabled.status, 200, enabled.text);
    });

    /** The real service as a worker on the test store: the same database and the same master key. */
    function startWorker(t: TestContext): ServiceProcess {
      return spawnService(
        t,
        {
          ...storeEnv(server.testStore),
          ROLE: 'worker',
          // The sandbox is the test server's: a worker serves none of its own.
          PROVIDER_BASE_URL: `${server.url}/sandbox/graph`,
          LOG_LEVEL: 'warn',
          WORKER_LEASE_MS: String(LEASE_MS),
        },
        server.testStore,
      );
    }

    const unfinishedJobs = () =>
      server.app.store.db
        .selectFrom('jobs')
        .select(['id', 'name', 'status', 'attempts'])
        .where('name', 'in', [runStep.name, messageSend.name])
        .where('status', '!=', 'succeeded')
        .orderBy('id')
        .execute();

    async function get(path: string): Promise<Json> {
      const response = await server.request('GET', path, { token: key });
      assert.equal(response.status, 200, response.text);
      return response.body;
    }

    it('every run resumes and completes; no step runs twice, no message is filed or sent twice', { timeout: 60_000 }, async (t) => {
      // The customers write first. Their messages are filed and their runs created as the webhooks
      // arrive; every step of every run is left to the worker process.
      const customers = Array.from({ length: RUNS }, (_, i) => ({ waId: newCustomer(), name: `Customer ${i}`, text: `order ${i}` }));
      for (const customer of customers) {
        const response = await server.request('POST', '/sandbox/control/inbound', {
          body: { phone_number_id: connection.phone_number_id, from: customer.waId, name: customer.name, type: 'text', text: customer.text },
        });
        assert.equal(response.status, 200, response.text);
      }

      const worker = startWorker(t);
      const crash = await kill(worker, server, connection);
      const unfinished = await unfinishedJobs();
      const held = unfinished.filter((job) => job.status === 'running');
      crash.check?.(held, unfinished);
      const runsDone = (await get(`/v1/runs?automation_id=${automationId}&status=completed&limit=100`)).data.length;
      assert.ok(unfinished.length > 0, 'the worker finished everything before the kill, so the crash proved nothing');

      // The jobs the dead worker queued are due by the real clock, and those it held come back once
      // its lease has run out: the test's server takes over from there.
      server.clock.set(Date.now() + LEASE_MS + SECOND);
      await settle(server);

      assert.deepEqual(await unfinishedJobs(), [], 'steps or sends left undone');
      // Each job the dead worker held was taken over as one more attempt, and that one succeeded.
      const heldNow = await server.app.store.db
        .selectFrom('jobs')
        .select(['id', 'status', 'attempts'])
        .where('id', 'in', ['', ...held.map((job) => job.id)])
        .orderBy('id')
        .execute();
      assert.deepEqual(
        heldNow.map((job) => ({ ...job })),
        held.map((job) => ({ id: job.id, status: 'succeeded', attempts: job.attempts + 1 })),
      );

      const runs = (await get(`/v1/runs?automation_id=${automationId}&limit=100`)).data as Json[];
      assert.equal(runs.length, RUNS, 'one run per customer');
      const providerMessageIds = new Set<string>();
      for (const run of runs) {
        assert.equal(run.status, 'completed', JSON.stringify(run));
        assert.equal(run.steps_executed, SENDS + 1, `${run.id}: the five sends and the end, each once`);
        const events = (await get(`/v1/runs/${run.id}/events?limit=100`)).data as Json[];
        const queued = events.filter((event) => event.type === 'effect.message_queued');
        assert.equal(queued.length, SENDS, `${run.id}'s event log: ${events.map((event) => event.type).join(', ')}`);
        assert.deepEqual(
          events.map((event) => event.seq),
          events.map((_, i) => i + 1),
          `${run.id}'s event log has no gap and no repeat`,
        );

        const messages = (await get(`/v1/messages?conversation_id=${run.conversation_id}&order=asc&limit=100`)).data as Json[];
        const outbound = messages.filter((message) => message.direction === 'outbound');
        const customer = customers.find((c) => `Message 1 for ${c.name}: ${c.text}` === outbound[0]?.text?.body);
        assert.ok(customer, `${run.id}'s first message names its customer: ${JSON.stringify(outbound[0])}`);
        assert.deepEqual(
          outbound.map((message) => message.text.body),
          Array.from({ length: SENDS }, (_, i) => `Message ${i + 1} for ${customer.name}: ${customer.text}`),
          `${run.id}: each message filed once, in order`,
        );
        assert.deepEqual(
          queued.map((event) => event.data.message_id),
          outbound.map((message) => message.id),
          `${run.id}: the event log names the messages filed`,
        );
        for (const message of outbound) {
          assert.equal(message.metadata.run_id, run.id);
          assert.ok(message.provider_message_id, `${message.id} was never accepted by the provider: ${JSON.stringify(message)}`);
          assert.ok(!providerMessageIds.has(message.provider_message_id), `${message.provider_message_id} is recorded for two messages`);
          providerMessageIds.add(message.provider_message_id);
        }

        // The provider's own record: this customer was sent exactly these five, each once.
        const received = await server.app.sandbox!.state.outboundTo(customer.waId);
        assert.deepEqual(
          received.map((sent) => sent.bizOpaqueCallbackData).sort(),
          outbound.map((message) => message.id).sort(),
          `${customer.waId} was sent ${received.length} messages for the ${SENDS} filed`,
        );
        assert.deepEqual(received.map((sent) => sent.id).sort(), outbound.map((message) => message.provider_message_id).sort());
      }
      assert.equal((await server.app.sandbox!.state.sentBy(connection.phone_number_id)).length, RUNS * SENDS, 'the provider took each message once');

      const heldNames = Map.groupBy(held, (job) => job.name);
      t.diagnostic(
        `killed ${crash.killedAt}, with ${runsDone} of ${RUNS} runs done and ${unfinished.length} steps and sends left, of which the dead ` +
          `worker held ${[...heldNames].map(([name, jobs]) => `${jobs.length} ${name}`).join(' and ') || 'none'}`,
      );
    });
  });
}

/** Waits for the worker to die of `kill`, failing at once if it exits any other way. */
async function killed(worker: ServiceProcess, what: string, progress: () => string = () => ''): Promise<void> {
  await waitFor(
    () => {
      if (worker.child.exitCode !== null) throw new Error(`the worker exited (${worker.child.exitCode}) before ${what}: ${worker.output()}`);
      return worker.child.signalCode !== null;
    },
    { timeoutMs: 30_000, intervalMs: 10, message: () => `${what}${progress()}. ${worker.output()}` },
  );
  assert.equal(worker.child.signalCode, 'SIGKILL');
}

describe('runs when a worker process crashes', () => {
  // The kill comes from inside the provider, while it takes the send and before it answers: the
  // worker can never learn that this send went out.
  crashSuite('killed the moment the provider takes one of its sends', async (worker, server) => {
    const killAt = randomInt(1, LATEST_KILL + 1);
    const { state } = server.app.sandbox!;
    // This process serves the sandbox alone, so counting here counts every send the provider took.
    let sends = 0;
    const recordOutbound = state.recordOutbound;
    const recordAndKill: typeof recordOutbound = async (fields) => {
      const sent = await recordOutbound(fields);
      sends += 1;
      if (sends === killAt) worker.child.kill('SIGKILL');
      return sent;
    };
    state.recordOutbound = recordAndKill;
    try {
      await killed(worker, `the provider's send ${killAt}`, () => `; it took ${sends}`);
    } finally {
      state.recordOutbound = recordOutbound;
    }
    return {
      killedAt: `at the provider's send ${killAt} of ${RUNS * SENDS}`,
      check(held, unfinished) {
        assert.ok(
          held.some((job) => job.name === messageSend.name),
          `the send the provider took as the worker died is held by the dead worker: ${JSON.stringify(unfinished)}`,
        );
      },
    };
  });

  // The kill comes from outside, once the runs have filed some number of messages: the worker may be
  // inside a step's transaction, or past its commit with the job not yet settled, or between jobs.
  crashSuite('killed once the runs have filed some of their messages', async (worker, server, connection) => {
    const killAt = randomInt(1, LATEST_KILL + 1);
    const filed = async () =>
      Number(
        (
          await server.app.store.db
            .selectFrom('messages')
            .select((eb) => eb.fn.countAll().as('count'))
            .where('connection_id', '=', connection.id)
            .where('direction', '=', 'outbound')
            .executeTakeFirstOrThrow()
        ).count,
      );
    let seen = 0;
    await waitFor(
      async () => {
        if (worker.child.exitCode !== null) throw new Error(`the worker exited (${worker.child.exitCode}): ${worker.output()}`);
        seen = await filed();
        return seen >= killAt;
      },
      { timeoutMs: 30_000, intervalMs: 2, message: () => `${killAt} messages filed; ${seen} are. ${worker.output()}` },
    );
    worker.child.kill('SIGKILL');
    await killed(worker, 'the kill');
    return { killedAt: `once ${seen} of ${RUNS * SENDS} messages were filed (drawn: ${killAt})` };
  });
});
