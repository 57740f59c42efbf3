import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { DAY } from '../../lib/clock.ts';
import { suiteScope, usingPostgres, type TestServer } from '../../../test/harness.ts';
import { startReceiver } from '../../../test/receiver.ts';
import {
  assertError,
  createConnection,
  createKey,
  defineTemplate,
  inbound,
  settle,
  signUp,
  startServerWithOwner,
  type SignedUp,
} from '../../../test/factories.ts';

const idempotencyKey = () => `usage-${randomBytes(8).toString('hex')}`;
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]), Buffer.alloc(284)]);

interface Connection {
  id: string;
  phone_number_id: string;
}
type MeterRow = { meter: string; quantity: number; unit: string; limit: number | null; percent: number | null };

describe('usage', () => {
  let server: TestServer;
  let owner: SignedUp;
  let key: string;
  const suite = suiteScope();

  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    // An API key: the tests move the clock by days, past a dashboard token's 15 minutes.
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });

  /** A new organization with a live number and a key, so that each test counts from zero. */
  async function organization(options: { test?: boolean } = {}) {
    const someone = await signUp(server);
    const orgKey = (await createKey(server, someone.token, { kind: 'organization', mode: options.test ? 'test' : 'live' })).key;
    const line: Connection = await createConnection(server, someone, { test: options.test ?? false });
    return { someone, key: orgKey, line, organizationId: someone.organizationId };
  }

  const usage = async (token: string, query = '') => {
    const response = await server.request('GET', `/v1/usage${query}`, { token });
    assert.equal(response.status, 200, response.text);
    return response.body as { plan: string; period_start: string; period_end: string; connection_id: string | null; meters: MeterRow[] };
  };
  const meter = (body: { meters: MeterRow[] }, name: string) => body.meters.find((row) => row.meter === name)!;

  const send = (token: string, line: Connection, body: Record<string, unknown>) =>
    server.request('POST', '/v1/messages', { token, body: { connection_id: line.id, ...body }, headers: { 'idempotency-key': idempotencyKey() } });

  /** A customer writes, and the business answers in the window: one received, one sent (service). */
  async function conversation(token: string, line: Connection): Promise<{ contactId: string }> {
    const received = await inbound(server, line);
    const reply = await send(token, line, { contact_id: received.contact_id, type: 'text', text: { body: 'Hello!' } });
    assert.equal(reply.status, 201, reply.text);
    await settle(server);
    return { contactId: received.contact_id };
  }

  const thresholdEvents = async (organizationId: string) =>
    (
      await server.app.store.db
        .selectFrom('events')
        .select('data')
        .where('organization_id', '=', organizationId)
        .where('type', '=', 'usage.threshold_reached')
        .orderBy('id')
        .execute()
    ).map((row) => JSON.parse(row.data) as { meter: string; threshold_percent: number; quantity: number; limit: number; connection_id: string | null });

  /** Sets a month's total as if that much had been sent: the thresholds' arithmetic is what is tested, not a thousand sends. */
  async function seedPeriod(organizationId: string, meterName: string, quantity: number): Promise<void> {
    const period = server.clock.now().toISOString().slice(0, 7);
    await server.app.store.db
      .insertInto('usage_periods')
      .values({ organization_id: organizationId, period, meter: meterName, quantity })
      .onConflict((conflict) => conflict.columns(['organization_id', 'period', 'meter']).doUpdateSet({ quantity }))
      .execute();
  }

  describe('meters', () => {
    it('counts messages received and sent by category, each once, in the month and on the number', async () => {
      const org = await organization();
      const { contactId } = await conversation(org.key, org.line);
      await defineTemplate(server, org.key, org.line, { name: 'order_update', category: 'utility', text: 'Order {{1}} shipped.', examples: ['A-1'] });
      await defineTemplate(server, org.key, org.line, { name: 'june_sale', category: 'marketing', text: 'Sale: {{1}} off.', examples: ['20%'] });
      for (const name of ['order_update', 'june_sale', 'june_sale']) {
        const sent = await send(org.key, org.line, { contact_id: contactId, type: 'template', template: { name, language: 'en_US', body: ['x'] } });
        assert.equal(sent.status, 201, sent.text);
      }
      await settle(server);

      const whole = await usage(org.key);
      assert.equal(whole.plan, 'free');
      assert.equal(whole.connection_id, null);
      assert.equal(whole.period_start, '2026-06-01T00:00:00.000Z');
      assert.equal(whole.period_end, '2026-07-01T00:00:00.000Z');
      assert.deepEqual(meter(whole, 'messages_sent'), { meter: 'messages_sent', quantity: 4, unit: 'messages', limit: 1000, percent: 0.4 });
      assert.equal(meter(whole, 'messages_sent.service').quantity, 1);
      assert.equal(meter(whole, 'messages_sent.utility').quantity, 1);
      assert.equal(meter(whole, 'messages_sent.marketing').quantity, 2);
      assert.equal(meter(whole, 'messages_sent.authentication').quantity, 0);
      assert.equal(meter(whole, 'messages_received').quantity, 1);
      assert.equal(meter(whole, 'unique_recipients_24h').quantity, 1, 'one contact, written to four times');
      assert.deepEqual(
        whole.meters.map((row) => row.meter),
        [
          'messages_sent',
          'messages_sent.marketing',
          'messages_sent.utility',
          'messages_sent.authentication',
          'messages_sent.service',
          'messages_received',
          'notifications_sent',
          'automation_runs',
          'webhook_deliveries',
          'media_bytes',
          'api_requests',
          'unique_recipients_24h',
        ],
      );

      const ofNumber = await usage(org.key, `?connection_id=${org.line.id}`);
      assert.equal(ofNumber.connection_id, org.line.id);
      assert.equal(meter(ofNumber, 'messages_sent').quantity, 4);
      assert.equal(meter(ofNumber, 'messages_sent').limit, null, "a number's share of the organization's limit is not shown");
      // The sandbox connects numbers at TIER_250.
      assert.deepEqual(meter(ofNumber, 'unique_recipients_24h'), { meter: 'unique_recipients_24h', quantity: 1, unit: 'recipients', limit: 250, percent: 0.4 });

      const other = await createConnection(server, org.someone);
      assert.equal(meter(await usage(org.key, `?connection_id=${other.id}`), 'messages_sent').quantity, 0);
    });

    it('counts webhook deliveries per endpoint and event once delivered, and the bytes of uploaded media', async () => {
      const org = await organization();
      const receiver = await startReceiver(suite);
      for (let i = 0; i < 2; i++) {
        const endpoint = await server.request('POST', '/v1/webhook-endpoints', { token: org.key, body: { url: receiver.url, events: ['message.received'] } });
        assert.equal(endpoint.status, 201, endpoint.text);
      }
      receiver.respond(500);
      await inbound(server, org.line);
      assert.equal(meter(await usage(org.key), 'webhook_deliveries').quantity, 0, 'a failed attempt is not a delivery');
      receiver.respond(200);
      server.clock.advance(10 * 60 * 1000);
      await settle(server);
      await inbound(server, org.line);
      const data = new FormData();
      data.append('file', new Blob([new Uint8Array(PNG)], { type: 'image/png' }), 'pixel.png');
      const uploaded = await fetch(`${server.url}/v1/media`, { method: 'POST', headers: { authorization: `Bearer ${org.key}` }, body: data });
      assert.equal(uploaded.status, 201, await uploaded.text());
      const body = await usage(org.key);
      assert.equal(meter(body, 'webhook_deliveries').quantity, 4, 'two events, two endpoints each');
      assert.equal(meter(body, 'media_bytes').quantity, PNG.length);
      assert.equal(meter(body, 'media_bytes').unit, 'bytes');
    });

    it('counts API requests within a second, not those of a test key', async () => {
      const org = await organization();
      const testKey = (await createKey(server, org.someone.token, { kind: 'organization', mode: 'test' })).key;
      await server.app.services.usage.flushRequests();
      const before = meter(await usage(org.key), 'api_requests').quantity;
      for (let i = 0; i < 3; i++) assert.equal((await server.request('GET', '/v1/identity', { token: org.key })).status, 200);
      for (let i = 0; i < 3; i++) assert.equal((await server.request('GET', '/v1/identity', { token: testKey })).status, 200);
      // The timer's rounds go by the service's clock: standing still, it writes nothing; a second on, it does.
      await server.app.services.usage.flushDueRequests();
      assert.equal(meter(await usage(org.key), 'api_requests').quantity, before);
      server.clock.advance(1000);
      await server.app.services.usage.flushDueRequests();
      const written = meter(await usage(org.key), 'api_requests').quantity;
      assert.equal(written, before + 5, 'the three identity calls and the two usage reads around them');
      await server.app.services.usage.flushRequests();
      assert.equal(meter(await usage(org.key), 'api_requests').quantity, written + 1, 'and the usage read since');
    });

    it("a test number's traffic leaves usage unchanged", async () => {
      const org = await organization({ test: true });
      // The owner's own dashboard requests setting it up are live traffic: written before the count starts.
      await server.app.services.usage.flushRequests();
      const before = await usage(org.key);
      await conversation(org.key, org.line);
      const receiver = await startReceiver(suite);
      const endpoint = await server.request('POST', '/v1/webhook-endpoints', { token: org.key, body: { url: receiver.url, events: ['*'] } });
      assert.equal(endpoint.status, 201, endpoint.text);
      await conversation(org.key, org.line);
      await server.app.services.usage.flushRequests();
      const after = await usage(org.key);
      for (const row of after.meters) {
        if (row.meter === 'api_requests') continue;
        assert.equal(row.quantity, 0, `${row.meter} stays at zero`);
      }
      assert.equal(meter(after, 'api_requests').quantity, meter(before, 'api_requests').quantity, 'a test key’s requests are not counted');
      const counters = await server.app.store.db
        .selectFrom('usage_counters')
        .select('meter')
        .where('organization_id', '=', org.organizationId)
        .where('meter', '!=', 'api_requests')
        .execute();
      assert.deepEqual(counters, [], 'no counter row but the owner’s own dashboard requests');
    });

    it('a month boundary: the new month starts at zero, the last one stays readable by name', async () => {
      const org = await organization();
      const start = server.clock.now();
      await conversation(org.key, org.line);
      const month = start.toISOString().slice(0, 7);
      server.clock.set(new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1, 0, 0, 1)));
      try {
        await conversation(org.key, org.line);
        const current = await usage(org.key);
        assert.equal(meter(current, 'messages_sent').quantity, 1);
        assert.equal(meter(current, 'messages_received').quantity, 1);
        const last = await usage(org.key, `?period=${month}`);
        assert.equal(last.period_start, `${month}-01T00:00:00.000Z`);
        assert.equal(meter(last, 'messages_sent').quantity, 1);
        assert.equal(meter(last, 'messages_received').quantity, 1);
        const days = await server.request('GET', `/v1/usage/breakdown?meter=messages_sent&period=${month}`, { token: org.key });
        assert.equal(days.status, 200, days.text);
        assert.deepEqual(
          days.body.data.map((row: { day: string; quantity: number }) => [row.day, row.quantity]),
          [[start.toISOString().slice(0, 10), 1]],
        );
      } finally {
        server.clock.set(start);
      }
    });
  });

  describe('thresholds and the hard limit', () => {
    it('emits usage.threshold_reached once per meter, threshold and month', async () => {
      const org = await organization();
      const { contactId } = await conversation(org.key, org.line);
      await seedPeriod(org.organizationId, 'messages_sent', 499);
      const text = { contact_id: contactId, type: 'text', text: { body: 'again' } };
      assert.equal((await send(org.key, org.line, text)).status, 201);
      await settle(server);
      assert.deepEqual(
        (await thresholdEvents(org.organizationId)).map((event) => [event.meter, event.threshold_percent, event.quantity, event.limit]),
        [['messages_sent', 50, 500, 1000]],
      );
      assert.equal((await send(org.key, org.line, text)).status, 201);
      await settle(server);
      assert.equal((await thresholdEvents(org.organizationId)).length, 1, 'not again at 501');
      // Crossing two marks at once warns of both.
      await seedPeriod(org.organizationId, 'messages_sent', 999);
      assert.equal((await send(org.key, org.line, text)).status, 201);
      await settle(server);
      assert.deepEqual(
        (await thresholdEvents(org.organizationId)).map((event) => event.threshold_percent),
        [50, 100],
        'from 999 to 1,000: 100 %; 80 % was passed while seeded, with no fact to warn of it',
      );
    });

    it("refuses a live send past the free plan's hard limit with plan_limit_reached, naming the meter and the plan; a test number still sends", async () => {
      const org = await organization();
      const { contactId } = await conversation(org.key, org.line);
      await seedPeriod(org.organizationId, 'messages_sent', 1000);
      const refused = await send(org.key, org.line, { contact_id: contactId, type: 'text', text: { body: 'one more' } });
      const error = assertError(refused, 402, 'plan_limit_reached');
      assert.equal(error.type, 'permission_error');
      assert.equal(error.meter, 'messages_sent');
      assert.equal(error.plan, 'free');
      assert.equal(error.limit, 1000);
      assert.match(error.message, /free plan sends at most 1000 messages a month/);
      const stored = await server.app.store.db.selectFrom('messages').select('id').where('connection_id', '=', org.line.id).execute();
      assert.equal(stored.length, 2, 'nothing of the refused send was kept');

      const testKey = (await createKey(server, org.someone.token, { kind: 'organization', mode: 'test' })).key;
      const testLine: Connection = await createConnection(server, org.someone, { test: true });
      const received = await inbound(server, testLine);
      const testSend = await send(testKey, testLine, { contact_id: received.contact_id, type: 'text', text: { body: 'test traffic' } });
      assert.equal(testSend.status, 201, testSend.text);

      server.clock.advance(31 * DAY);
      try {
        const nextMonth = await conversation(org.key, org.line);
        assert.ok(nextMonth.contactId, 'the limit is per month');
      } finally {
        server.clock.advance(-31 * DAY);
      }
    });

    it('a notification past the hard limit fails with plan_limit_reached, its message never written', async () => {
      const org = await organization();
      await defineTemplate(server, org.key, org.line, { name: 'login_code', category: 'authentication', text: '{{1}} is your code.', examples: ['123456'] });
      await seedPeriod(org.organizationId, 'messages_sent', 1000);
      const created = await server.request('POST', '/v1/notifications', {
        token: org.key,
        body: { connection_id: org.line.id, to: '+447700900123', template: { name: 'login_code', language: 'en_US', parameters: { body: ['123456'] } } },
        headers: { 'idempotency-key': idempotencyKey() },
      });
      assert.equal(created.status, 201, created.text);
      await settle(server);
      const notification = (await server.request('GET', `/v1/notifications/${created.body.id}`, { token: org.key })).body;
      assert.equal(notification.status, 'failed');
      assert.equal(notification.error.code, 'plan_limit_reached');
      assert.equal(notification.message_id, null);
    });

    it("an automation's send past the hard limit fails its run with plan_limit_reached; the run itself is counted", async () => {
      const org = await organization();
      const received = await inbound(server, org.line);
      const created = await server.request('POST', '/v1/automations', {
        token: org.key,
        body: {
          name: 'Greeter',
          connection_id: org.line.id,
          definition: { trigger: { type: 'api' }, start: 'say', steps: [{ id: 'say', type: 'send_message', text: 'hello' }] },
        },
      });
      assert.equal(created.status, 201, created.text);
      for (const action of ['deploy', 'enable']) {
        const answer = await server.request('POST', `/v1/automations/${created.body.id}/${action}`, {
          token: org.key,
          ...(action === 'deploy' ? { body: { version: 1 } } : {}),
        });
        assert.equal(answer.status, 200, answer.text);
      }
      await seedPeriod(org.organizationId, 'messages_sent', 1000);
      const started = await server.request('POST', '/v1/runs', {
        token: org.key,
        headers: { 'idempotency-key': idempotencyKey() },
        body: { automation_id: created.body.id, contact_id: received.contact_id },
      });
      assert.equal(started.status, 201, started.text);
      await settle(server);
      const run = (await server.request('GET', `/v1/runs/${started.body.id}`, { token: org.key })).body;
      assert.equal(run.status, 'failed');
      assert.equal(run.error.code, 'plan_limit_reached');
      const runs = await server.request('GET', `/v1/usage/breakdown?meter=automation_runs&group_by=automation`, { token: org.key });
      assert.deepEqual(
        runs.body.data.map((row: { automation_id: string; quantity: number }) => [row.automation_id, row.quantity]),
        [[created.body.id, 1]],
      );
    });

    it('warns when a number reaches half of its messaging tier in 24 hours', async () => {
      const org = await organization();
      const tier = 250;
      // 124 recipients already written to within the day, then the 125th.
      const now = server.clock.now().toISOString();
      await server.app.store.db
        .insertInto('usage_recipients')
        .values(
          Array.from({ length: tier / 2 - 1 }, (_, i) => ({
            organization_id: org.organizationId,
            connection_id: org.line.id,
            contact_id: `ctc_seed${i}`,
            last_sent_at: now,
          })),
        )
        .execute();
      await conversation(org.key, org.line);
      const events = await thresholdEvents(org.organizationId);
      assert.deepEqual(
        events.map((event) => [event.meter, event.connection_id, event.threshold_percent, event.quantity, event.limit]),
        [['unique_recipients_24h', org.line.id, 50, 125, 250]],
      );
      // A day later the seeded recipients are out of the window (and purged by the hourly job).
      server.clock.advance(DAY + 1000);
      try {
        assert.ok((await server.app.services.usage.purgeRecipients()) >= tier / 2 - 1);
        assert.equal(meter(await usage(org.key, `?connection_id=${org.line.id}`), 'unique_recipients_24h').quantity, 0);
      } finally {
        server.clock.advance(-(DAY + 1000));
      }
    });

    it(`${usingPostgres ? 'PostgreSQL' : 'SQLite'}: 50 concurrent sends count exactly 50`, async () => {
      const org = await organization();
      const { contactId } = await conversation(org.key, org.line);
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => send(org.key, org.line, { contact_id: contactId, type: 'text', text: { body: `burst ${i}` } })),
      );
      assert.deepEqual(new Set(answers.map((answer) => answer.status)), new Set([201]));
      await settle(server, 30);
      const body = await usage(org.key);
      assert.equal(meter(body, 'messages_sent').quantity, 51);
      assert.equal(meter(body, 'messages_sent.service').quantity, 51);
    });
  });

  describe('breakdown', () => {
    it('groups by day, number and category, paged in ascending order with opaque cursors', async () => {
      const org = await organization();
      const second: Connection = await createConnection(server, org.someone, { name: 'Second line' });
      const firstDay = server.clock.now().toISOString().slice(0, 10);
      await conversation(org.key, org.line);
      server.clock.advance(DAY);
      try {
        await conversation(org.key, org.line);
        await conversation(org.key, second);
        const secondDay = server.clock.now().toISOString().slice(0, 10);
        const get = (query: string) => server.request('GET', `/v1/usage/breakdown?${query}`, { token: org.key });

        const days = await get('meter=messages_sent&group_by=day');
        assert.equal(days.status, 200, days.text);
        assert.deepEqual(
          days.body.data.map((row: Record<string, unknown>) => [row.object, row.meter, row.unit, row.day, row.quantity]),
          [
            ['usage_breakdown_row', 'messages_sent', 'messages', firstDay, 1],
            ['usage_breakdown_row', 'messages_sent', 'messages', secondDay, 2],
          ],
        );
        assert.equal(days.body.has_more, false);
        assert.equal(days.body.next_cursor, null);

        const first = await get('meter=messages_received&group_by=day&limit=1');
        assert.deepEqual([first.body.data[0].day, first.body.has_more], [firstDay, true]);
        const next = await get(`meter=messages_received&group_by=day&limit=1&after=${first.body.next_cursor}`);
        assert.deepEqual([next.body.data[0].day, next.body.data[0].quantity, next.body.has_more], [secondDay, 2, false]);

        const numbers = await get('meter=messages_sent&group_by=connection');
        assert.deepEqual(
          numbers.body.data.map((row: { connection_id: string; quantity: number }) => [row.connection_id, row.quantity]).sort(),
          [
            [org.line.id, 2],
            [second.id, 1],
          ].sort(),
        );
        const onSecond = await get(`meter=messages_sent&group_by=day&connection_id=${second.id}`);
        assert.deepEqual(
          onSecond.body.data.map((row: { day: string; quantity: number }) => [row.day, row.quantity]),
          [[secondDay, 1]],
        );

        const categories = await get('meter=messages_sent&group_by=category');
        assert.deepEqual(
          categories.body.data.map((row: { category: string; quantity: number }) => [row.category, row.quantity]),
          [['service', 3]],
        );
      } finally {
        server.clock.advance(-DAY);
      }
    });

    it('groups automation runs by automation', async () => {
      const org = await organization();
      const automationId = 'aut_01J0000000000000000000TEST';
      await server.app.store.db.transaction().execute((trx) =>
        server.app.services.usage.count(trx, {
          organizationId: org.organizationId,
          connectionId: org.line.id,
          meter: 'automation_runs',
          quantity: 3,
          automationId,
        }),
      );
      const rows = await server.request('GET', '/v1/usage/breakdown?meter=automation_runs&group_by=automation', { token: org.key });
      assert.equal(rows.status, 200, rows.text);
      assert.deepEqual(
        rows.body.data.map((row: { automation_id: string; quantity: number }) => [row.automation_id, row.quantity]),
        [[automationId, 3]],
      );
    });
  });

  describe('bad input and access', () => {
    it('refuses bad queries with validation_failed naming the parameter', async () => {
      const cases: [string, string][] = [
        ['/v1/usage?period=2026-13', '/query/period'],
        ['/v1/usage?period=last', '/query/period'],
        ['/v1/usage?connection_id=nope', '/query/connection_id'],
        ['/v1/usage?extra=1', '/query'],
        ['/v1/usage/breakdown', '/query'],
        ['/v1/usage/breakdown?meter=bogus', '/query/meter'],
        ['/v1/usage/breakdown?meter=messages_sent&group_by=week', '/query/group_by'],
        ['/v1/usage/breakdown?meter=api_requests&group_by=category', '/query/group_by'],
        ['/v1/usage/breakdown?meter=messages_sent&group_by=automation', '/query/group_by'],
        ['/v1/usage/breakdown?meter=unique_recipients_24h', '/query/meter'],
        ['/v1/usage/breakdown?meter=messages_sent&after=%25%25', '/query/after'],
        ['/v1/usage/breakdown?meter=messages_sent&before=kAA', '/query'],
        ['/v1/usage/breakdown?meter=messages_sent&limit=0', '/query/limit'],
      ];
      for (const [path, param] of cases) {
        const error = assertError(await server.request('GET', path, { token: key }), 400, 'validation_failed');
        assert.ok(error.param === param || error.param?.startsWith(param), `${path}: ${error.param} is not ${param}`);
      }
    });

    it("another organization's number is a 404; a connection key sees its own number only", async () => {
      const org = await organization();
      const other = await organization();
      assertError(await server.request('GET', `/v1/usage?connection_id=${other.line.id}`, { token: org.key }), 404, 'resource_not_found');
      assertError(
        await server.request('GET', `/v1/usage/breakdown?meter=messages_sent&connection_id=${other.line.id}`, { token: org.key }),
        404,
        'resource_not_found',
      );
      const connectionKey = (
        await createKey(server, org.someone.token, { kind: 'connection', mode: 'live', connection_id: org.line.id, scopes: ['usage:read'] })
      ).key;
      const own = await usage(connectionKey);
      assert.equal(own.connection_id, org.line.id);
      const sibling = await createConnection(server, org.someone);
      assertError(await server.request('GET', `/v1/usage?connection_id=${sibling.id}`, { token: connectionKey }), 404, 'resource_not_found');
    });

    it('needs usage:read', async () => {
      const org = await organization();
      const narrow = (await createKey(server, org.someone.token, { kind: 'organization', mode: 'live', scopes: ['messages:read'] })).key;
      assertError(await server.request('GET', '/v1/usage', { token: narrow }), 403, 'scope_missing');
      assertError(await server.request('GET', '/v1/usage/breakdown?meter=messages_sent', { token: narrow }), 403, 'scope_missing');
      assertError(await server.request('GET', '/v1/usage'), 401, 'credential_missing');
    });
  });
});
