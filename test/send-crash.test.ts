/**
 * Sends across an api process's crash: a separate api process (the real `src/main.ts` with ROLE=api)
 * shares the test store, takes concurrent sends, and is killed with SIGKILL while they run. Every
 * request is then retried with its key on the test's own server, which also runs the worker: each
 * key must end with exactly one message, sent to the provider once, whatever the crash cut.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { ManualClock } from '../src/lib/clock.ts';
import { createConnection, createKey, inbound, settle, signUp } from './factories.ts';
import { startServer, suiteScope, type Scope, type TestServer } from './harness.ts';
import { listeningUrl, spawnService, storeEnv } from './service-process.ts';
import { waitFor } from './wait.ts';

/** Sends whose answers the client throws away unread: the process commits them, then dies. */
const ANSWERS_LOST = 12;
/** Sends in flight when the process dies. */
const CUT_SHORT = 48;
const KILL_AFTER_ANSWERS = 8;

interface ApiProcess {
  child: ChildProcess;
  url: string;
}

interface Send {
  key: string;
  body: Record<string, unknown>;
}

describe('sends when an api process crashes', () => {
  let server: TestServer;
  let apiKey: string;
  let contactId: string;
  let connectionId: string;

  const suite = suiteScope();
  before(async () => {
    // The api process runs on the real clock; keys and windows must be valid by it too.
    server = await startServer(suite, { clock: new ManualClock(Date.now()) });
    const owner = await signUp(server);
    apiKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    const connection = await createConnection(server, owner);
    connectionId = connection.id;
    // The customer writes first, so free-form sends are inside the 24-hour window.
    contactId = (await inbound(server, connection)).contact_id;
  });

  /** The real service as an api process on the test store: the same database and master key, no worker. */
  async function startApi(scope: Scope): Promise<ApiProcess> {
    const service = spawnService(scope, { ...storeEnv(server.testStore), ROLE: 'api', LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: '0' }, server.testStore);
    return { child: service.child, url: await listeningUrl(service) };
  }

  function sendOf(label: string, index: number): Send {
    return {
      key: `crash-${label}-${index}-${Date.now()}`,
      body: { connection_id: connectionId, contact_id: contactId, type: 'text', text: { body: `${label} ${index}` } },
    };
  }

  function post(url: string, send: Send, dispatcher: Agent) {
    return request(`${url}/v1/messages`, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': send.key },
      body: JSON.stringify(send.body),
    });
  }

  const outboundCount = async () =>
    Number(
      (
        await server.app.store.db
          .selectFrom('messages')
          .select((eb) => eb.fn.countAll().as('count'))
          .where('direction', '=', 'outbound')
          .executeTakeFirstOrThrow()
      ).count,
    );

  it('every key ends with exactly one message, sent once; an answer the crash lost replays its 201', { timeout: 120_000 }, async (t) => {
    const api = await startApi(t);
    const dispatcher = new Agent({ connections: 64 });
    t.after(() => dispatcher.close());
    const before = await outboundCount();

    // Answers lost: the client throws each answer away unread, as if the connection had dropped
    // with it, and the process dies once all of them are committed.
    const lost = Array.from({ length: ANSWERS_LOST }, (_, index) => sendOf('lost', index));
    await Promise.all(
      lost.map(async (send) => {
        const response = await post(api.url, send, dispatcher);
        await response.body.dump();
      }),
    );

    // Cut short: many sends at once, and the process is killed when the first few have answered.
    const cut = Array.from({ length: CUT_SHORT }, (_, index) => sendOf('cut', index));
    const answered = new Map<string, { status: number; body: string }>();
    const inFlight = cut.map(async (send) => {
      try {
        const response = await post(api.url, send, dispatcher);
        const text = await response.body.text();
        answered.set(send.key, { status: response.statusCode, body: text });
      } catch {
        // The connection died with the process: the client never learns what happened.
      }
    });
    await waitFor(() => answered.size >= KILL_AFTER_ANSWERS, { timeoutMs: 30_000, message: 'the first answers of the concurrent sends' });
    api.child.kill('SIGKILL');
    await once(api.child, 'exit');
    await Promise.all(inFlight);
    assert.ok(answered.size < CUT_SHORT, 'the kill must land while sends are still in flight');
    for (const [key, answer] of answered) assert.equal(answer.status, 201, `${key}: ${answer.body}`);

    // Every request again, with its key, on the surviving server.
    const messageIds = new Set<string>();
    let replayedLost = 0;
    for (const send of [...lost, ...cut]) {
      const retry = await server.request('POST', '/v1/messages', { token: apiKey, body: send.body, headers: { 'idempotency-key': send.key } });
      assert.equal(retry.status, 201, `${send.key}: ${retry.text}`);
      const first = answered.get(send.key);
      if (first) {
        assert.equal(retry.headers.get('idempotency-replayed'), 'true', `${send.key} was answered, so its retry replays`);
        assert.equal(retry.text, first.body, `${send.key}: the replay is the first answer, byte for byte`);
      }
      if (lost.includes(send)) {
        assert.equal(retry.headers.get('idempotency-replayed'), 'true', `${send.key} was committed before the crash, so its retry replays its 201`);
        replayedLost++;
      }
      assert.ok(!messageIds.has(retry.body.id), `${send.key} answered with another key's message`);
      messageIds.add(retry.body.id);
      // A second retry of each is a replay of the same message.
      const again = await server.request('POST', '/v1/messages', { token: apiKey, body: send.body, headers: { 'idempotency-key': send.key } });
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.equal(again.body.id, retry.body.id);
    }
    assert.equal(replayedLost, ANSWERS_LOST);
    assert.equal(await outboundCount(), before + lost.length + cut.length, 'exactly one message per key');

    // Delivered by this server's worker: each message reaches the provider exactly once. The api
    // process queued its jobs by the real clock, so this server's catches up with it first.
    server.clock.set(Date.now());
    await settle(server);
    const rows = await server.app.store.db
      .selectFrom('messages')
      .select(['id', 'status'])
      .where('id', 'in', [...messageIds])
      .execute();
    assert.equal(rows.length, messageIds.size);
    for (const row of rows) assert.notEqual(row.status, 'queued', `${row.id} was never sent`);
    const webhooks = (await server.request('GET', '/sandbox/control/webhooks')).body.data as { body: any }[];
    const sentReports = new Map<string, number>();
    for (const webhook of webhooks) {
      for (const entry of webhook.body.entry ?? []) {
        for (const change of entry.changes ?? []) {
          for (const status of change.value?.statuses ?? []) {
            if (status.status === 'sent' && messageIds.has(status.biz_opaque_callback_data)) {
              sentReports.set(status.biz_opaque_callback_data, (sentReports.get(status.biz_opaque_callback_data) ?? 0) + 1);
            }
          }
        }
      }
    }
    assert.equal(sentReports.size, messageIds.size, 'every message reached the provider');
    for (const [id, count] of sentReports) assert.equal(count, 1, `${id} reached the provider ${count} times`);
  });
});
