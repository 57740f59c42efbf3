import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { HOUR, MINUTE, SECOND } from '../../lib/clock.ts';
import { sql } from 'kysely';
import { suiteScope, usingPostgres, type TestServer } from '../../../test/harness.ts';
import { createConnection, createKey, inbound, newCustomer, settle, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';

describe('the window_expiring timer', () => {
  let server: TestServer;
  let owner: SignedUp;
  let token: string;
  let support: { id: string; phone_number_id: string };
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    support = await createConnection(server, owner, { name: 'Support' });
    // The clock moves by days here, past a dashboard token's 15 minutes.
    token = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });

  /** Moves the clock to `start + offset` and runs what fell due. */
  async function runTo(start: number, offset: number): Promise<void> {
    server.clock.set(start + offset);
    await settle(server);
  }
  const warnings = async (conversationId: string) =>
    (await server.app.store.db.selectFrom('events').selectAll().where('type', '=', 'conversation.window_expiring').orderBy('id').execute())
      .map((row) => ({ created_at: row.created_at, connection_id: row.connection_id, object: JSON.parse(row.data) as Record<string, any> }))
      .filter((event) => event.object.id === conversationId);
  const expiries = async (conversationId: string) => (await warnings(conversationId)).map((event) => event.object.window_expires_at as string);
  const iso = (ms: number) => new Date(ms).toISOString();
  const queuedTimers = async (conversationId: string) =>
    (
      await server.app.store.db
        .selectFrom('jobs')
        .select(['run_at', 'dedupe_key'])
        .where('name', '=', 'conversation.window_expiring')
        .where('status', '=', 'queued')
        .execute()
    ).filter((job) => job.dedupe_key!.includes(conversationId));

  it('fires once, one hour before the window closes, with the conversation and when it closes', async () => {
    const start = server.clock.now().getTime();
    const message = await inbound(server, support);
    await runTo(start, 23 * HOUR - SECOND);
    assert.deepEqual(await warnings(message.conversation_id), []);
    await runTo(start, 23 * HOUR);
    const [warning, ...more] = await warnings(message.conversation_id);
    assert.equal(more.length, 0);
    assert.equal(warning!.created_at, iso(start + 23 * HOUR));
    assert.equal(warning!.connection_id, support.id);
    assert.equal(warning!.object.object, 'conversation');
    assert.equal(warning!.object.contact_id, message.contact_id);
    assert.equal(warning!.object.last_inbound_at, iso(start));
    assert.equal(warning!.object.window_expires_at, iso(start + 24 * HOUR));
    await runTo(start, 48 * HOUR);
    assert.equal((await warnings(message.conversation_id)).length, 1);
  });

  it('a later message moves the timer, not duplicates it: nothing at 23 h, a warning at 33 h', async () => {
    const start = server.clock.now().getTime();
    const from = newCustomer();
    const message = await inbound(server, support, { from });
    await runTo(start, 10 * HOUR);
    await inbound(server, support, { from });
    assert.deepEqual(
      (await queuedTimers(message.conversation_id)).map((job) => job.run_at),
      [iso(start + 33 * HOUR)],
    );
    await runTo(start, 23 * HOUR);
    assert.deepEqual(await warnings(message.conversation_id), []);
    await runTo(start, 33 * HOUR);
    assert.deepEqual(await expiries(message.conversation_id), [iso(start + 34 * HOUR)]);
  });

  it('a message after the warning pushes the closing time back, and the new closing time is warned about too', async () => {
    const start = server.clock.now().getTime();
    const from = newCustomer();
    const message = await inbound(server, support, { from });
    await runTo(start, 23 * HOUR);
    await runTo(start, 23 * HOUR + 30 * MINUTE);
    await inbound(server, support, { from });
    await runTo(start, 46 * HOUR + 30 * MINUTE - SECOND);
    assert.deepEqual(await expiries(message.conversation_id), [iso(start + 24 * HOUR)]);
    await runTo(start, 46 * HOUR + 30 * MINUTE);
    assert.deepEqual(await expiries(message.conversation_id), [iso(start + 24 * HOUR), iso(start + 47 * HOUR + 30 * MINUTE)]);
  });

  it('a window that opens again after it closed gets its own timer', async () => {
    const start = server.clock.now().getTime();
    const from = newCustomer();
    const message = await inbound(server, support, { from });
    await runTo(start, 23 * HOUR);
    await runTo(start, 30 * HOUR);
    await inbound(server, support, { from });
    await runTo(start, 53 * HOUR);
    assert.deepEqual(await expiries(message.conversation_id), [iso(start + 24 * HOUR), iso(start + 54 * HOUR)]);
  });

  it('a timer that runs again (a worker lost after sending) warns once', async () => {
    const start = server.clock.now().getTime();
    const message = await inbound(server, support);
    await runTo(start, 23 * HOUR);
    await server.app.store.db
      .updateTable('jobs')
      .set({ status: 'queued', attempts: 0 })
      .where('name', '=', 'conversation.window_expiring')
      .where('dedupe_key', 'like', `%${message.conversation_id}%`)
      .execute();
    await runTo(start, 23 * HOUR + MINUTE);
    assert.equal((await warnings(message.conversation_id)).length, 1);
  });

  it('a warning that could not run before the window closed (no worker for that hour) is dropped', async () => {
    const start = server.clock.now().getTime();
    const message = await inbound(server, support);
    await runTo(start, 24 * HOUR);
    assert.deepEqual(await warnings(message.conversation_id), []);
    assert.deepEqual(await queuedTimers(message.conversation_id), []);
  });

  it('a message processed after its window closed (a late webhook) sets no timer', async () => {
    const start = server.clock.now().getTime();
    const response = await server.request('POST', '/sandbox/control/inbound', {
      body: { phone_number_id: support.phone_number_id, from: newCustomer(), type: 'text', text: 'hi' },
    });
    await server.app.sandbox!.idle();
    await runTo(start, 25 * HOUR);
    const message = await server.app.store.db
      .selectFrom('messages')
      .selectAll()
      .where('provider_message_id', '=', response.body.message_id)
      .executeTakeFirstOrThrow();
    assert.equal(message.sent_at, iso(start));
    assert.deepEqual(await queuedTimers(message.conversation_id), []);
    assert.deepEqual(await warnings(message.conversation_id), []);
  });

  it('imported history moves nothing', async () => {
    const coexistence = await createConnection(server, { token }, { coexistence: true });
    await settle(server);
    const start = server.clock.now().getTime();
    const from = newCustomer();
    const message = await inbound(server, coexistence, { from });
    await runTo(start, 5 * HOUR);
    const history = await server.request('POST', '/sandbox/control/history', {
      body: {
        phone_number_id: coexistence.phone_number_id,
        phase: 0,
        chunk_order: 1,
        progress: 100,
        threads: [{ user: from, messages: [{ direction: 'inbound', text: 'from the app', timestamp: Math.floor((start + 5 * HOUR) / 1000) }] }],
      },
    });
    assert.equal(history.status, 200, history.text);
    await settle(server);
    const conversation = await server.app.store.db.selectFrom('conversations').selectAll().where('id', '=', message.conversation_id).executeTakeFirstOrThrow();
    assert.equal(conversation.last_inbound_at, iso(start));
    await runTo(start, 23 * HOUR);
    assert.deepEqual(await expiries(message.conversation_id), [iso(start + 24 * HOUR)]);
  });

  describe('after a contact merge', () => {
    const merge = (survivorId: string, sourceId: string) =>
      server.request('POST', `/v1/contacts/${survivorId}/merge`, { token, body: { source_contact_id: sourceId } });

    it("the survivor's timer follows the merged thread's later customer message; the folded thread's never fires", async () => {
      const start = server.clock.now().getTime();
      const survivor = await inbound(server, support);
      await runTo(start, 5 * HOUR);
      const source = await inbound(server, support);
      await runTo(start, 6 * HOUR);
      assert.equal((await merge(survivor.contact_id, source.contact_id)).status, 200);
      assert.deepEqual(
        (await queuedTimers(survivor.conversation_id)).map((job) => job.run_at),
        [iso(start + 28 * HOUR)],
      );
      await runTo(start, 23 * HOUR);
      assert.deepEqual(await warnings(survivor.conversation_id), []);
      await runTo(start, 28 * HOUR);
      assert.deepEqual(await expiries(survivor.conversation_id), [iso(start + 29 * HOUR)]);
      assert.deepEqual(await warnings(source.conversation_id), []);
    });

    it('a closing time the folded thread was already warned about is not warned about again', async () => {
      const start = server.clock.now().getTime();
      const survivor = await inbound(server, support);
      await runTo(start, HOUR);
      const source = await inbound(server, support);
      await runTo(start, 23 * HOUR);
      await runTo(start, 24 * HOUR + 10 * MINUTE);
      assert.deepEqual(await expiries(source.conversation_id), [iso(start + 25 * HOUR)]);
      assert.equal((await merge(survivor.contact_id, source.contact_id)).status, 200);
      await runTo(start, 26 * HOUR);
      assert.deepEqual(await expiries(survivor.conversation_id), [iso(start + 24 * HOUR)]);
    });
  });
});

describe('filing a message into its thread', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
  });

  it('two first messages of one thread at once file into one conversation, created once', async () => {
    const support = await createConnection(server, owner, { name: 'Support' });
    const sales = await createConnection(server, owner, { name: 'Sales' });
    // The customer has a thread on Support, none yet on Sales.
    const written = await inbound(server, support);
    const { db } = server.app.store;
    const { conversations } = server.app.services;
    const input = { organizationId: owner.organizationId, connectionId: sales.id, contactId: written.contact_id, inbound: true, imported: false };
    const earlier = server.clock.now();
    const later = new Date(earlier.getTime() + 1000);

    // The first creates the thread and holds its transaction open; the second starts meanwhile.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let filed!: () => void;
    const firstFiled = new Promise<void>((resolve) => (filed = resolve));
    const first = db.transaction().execute(async (trx) => {
      const conversation = await conversations.recordMessage(trx, { ...input, at: earlier });
      filed();
      await held;
      return conversation;
    });
    await firstFiled;
    const second = db.transaction().execute((trx) => conversations.recordMessage(trx, { ...input, at: later }));
    if (usingPostgres) {
      // On PostgreSQL the second does not see the uncommitted thread: its insert waits on the first's.
      // Released once it waits (or after a few seconds: then it meets the committed row instead).
      for (let tries = 0; tries < 200; tries++) {
        const { rows } = await sql<{ waiting: number }>`
          select count(*)::int as waiting from pg_stat_activity
          where wait_event_type = 'Lock' and query like 'insert into "conversations"%'`.execute(db);
        if (rows[0]!.waiting > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    release();
    const [created, joined] = await Promise.all([first, second]);

    assert.equal(joined.id, created.id);
    assert.equal(joined.last_inbound_at, later.toISOString());
    const threads = await db
      .selectFrom('conversations')
      .select('id')
      .where('connection_id', '=', sales.id)
      .where('contact_id', '=', written.contact_id)
      .execute();
    assert.deepEqual(threads, [{ id: created.id }]);
    const announced = await db.selectFrom('events').select('data').where('type', '=', 'conversation.created').execute();
    assert.equal(announced.filter((event) => (JSON.parse(event.data) as { id: string }).id === created.id).length, 1);
  });

  it("a message older than the thread's last one moves none of its clocks or its state", async () => {
    const support = await createConnection(server, owner, { name: 'Support' });
    const written = await inbound(server, support);
    const { db } = server.app.store;
    const before = await db.selectFrom('conversations').selectAll().where('id', '=', written.conversation_id).executeTakeFirstOrThrow();
    // An outbound message older than the thread's last one (a business-app echo processed late, say).
    const older = new Date(Date.parse(before.last_message_at!) - 60_000);
    const filed = await db.transaction().execute((trx) =>
      server.app.services.conversations.recordMessage(trx, {
        organizationId: owner.organizationId,
        connectionId: support.id,
        contactId: written.contact_id,
        at: older,
        inbound: false,
        imported: false,
      }),
    );
    const after = await db.selectFrom('conversations').selectAll().where('id', '=', written.conversation_id).executeTakeFirstOrThrow();
    assert.equal(filed.id, written.conversation_id);
    assert.deepEqual({ ...after, updated_at: before.updated_at }, before);
  });
});
