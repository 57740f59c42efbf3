import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { DAY, HOUR, MINUTE, SECOND } from '../../lib/clock.ts';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';
import {
  assertError,
  createConnection,
  defineTemplate,
  createKey,
  inbound,
  newCustomer,
  settle,
  signUp,
  startServerWithOwner,
  type SignedUp,
} from '../../../test/factories.ts';

const idempotencyKey = () => `ntf-${randomBytes(8).toString('hex')}`;

describe('notifications', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: { id: string; phone_number_id: string; throughput_per_second: number };
  let key: string;
  let receiver: Receiver;
  const templates: Record<string, { id: string; provider_template_id: string }> = {};
  const suite = suiteScope();

  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    line = await createConnection(server, owner);
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    receiver = await startReceiver(suite);
    const endpoint = await server.request('POST', '/v1/webhook-endpoints', {
      token: key,
      body: { url: receiver.url, events: ['notification.sent', 'notification.delivered', 'notification.failed', 'notification.expired'] },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    const define = async (name: string, category: string, text: string, examples: string[], approve: boolean) => {
      templates[name] = await defineTemplate(server, key, line, { name, category, text, examples, approve });
    };
    await define('login_code', 'authentication', '{{1}} is your code.', ['123456'], true);
    await define('shipping_notice', 'utility', 'Hi {{1}}, order {{2}} has shipped.', ['Ana', 'A-1'], true);
    await define('spring_sale', 'marketing', 'Spring sale: {{1}} off everything.', ['20%'], true);
    await define('under_review', 'utility', 'Hello {{1}}.', ['Ana'], false);
  });

  const create = (body: Record<string, unknown>, options: { key?: string | null; token?: string } = {}) =>
    server.request('POST', '/v1/notifications', {
      token: options.token ?? key,
      body: { connection_id: line.id, ...body },
      headers: options.key === null ? {} : { 'idempotency-key': options.key ?? idempotencyKey() },
    });
  const batch = (body: Record<string, unknown>) =>
    server.request('POST', '/v1/notifications/batch', {
      token: key,
      body: { connection_id: line.id, ...body },
      headers: { 'idempotency-key': idempotencyKey() },
    });
  const get = async (id: string) => {
    const response = await server.request('GET', `/v1/notifications/${id}`, { token: key });
    assert.equal(response.status, 200, response.text);
    return response.body;
  };
  const shipping = (parameters: unknown = { body: ['Ana', 'A-1'] }) => ({ template: { name: 'shipping_notice', language: 'en_US', parameters } });
  /** The webhook events received for one notification, by type, in order. */
  const eventsOf = (id: string) =>
    receiver.received
      .map((request) => JSON.parse(request.body))
      .filter((event) => event.data.object.id === id)
      .map((event) => event.type as string);
  /** Settles, then lets a batch's spaced sends fall due (the clock stands still otherwise) and settles again. */
  const settleSpaced = async (span = 5 * SECOND) => {
    await settle(server);
    server.clock.advance(span);
    await settle(server);
  };
  const countJobs = async (name: string) =>
    Number(
      (
        await server.app.store.db
          .selectFrom('jobs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('name', '=', name)
          .where('status', '=', 'queued')
          .executeTakeFirstOrThrow()
      ).n,
    );

  describe('the happy path', () => {
    it('is sent through a real message and delivered, each event once', async () => {
      const to = `+${newCustomer()}`;
      const response = await create({ to, ...shipping(), metadata: { order: 'A-1' } });
      assert.equal(response.status, 201, response.text);
      assert.match(response.body.id, /^ntf_/);
      assert.equal(response.body.status, 'queued');
      assert.equal(response.body.expires_at, new Date(server.clock.now().getTime() + 12 * HOUR).toISOString(), 'utility: 12 hours by default');
      assert.deepEqual(response.body.template, {
        id: templates.shipping_notice!.id,
        name: 'shipping_notice',
        language: 'en_US',
        category: 'utility',
        parameters: { body: ['Ana', 'A-1'] },
      });
      await settle(server);
      const delivered = await get(response.body.id);
      assert.equal(delivered.status, 'delivered');
      assert.equal(delivered.attempts, 1);
      assert.ok(delivered.sent_at && delivered.delivered_at);
      assert.match(delivered.contact_id, /^ct_/);
      const message = await server.request('GET', `/v1/messages/${delivered.message_id}`, { token: key });
      assert.equal(message.status, 200);
      assert.equal(message.body.type, 'template');
      assert.equal(message.body.contact_id, delivered.contact_id);
      assert.deepEqual(message.body.metadata, { notification_id: delivered.id });
      const thread = await server.request('GET', `/v1/messages?conversation_id=${message.body.conversation_id}`, { token: key });
      assert.deepEqual(
        thread.body.data.map((item: { id: string }) => item.id),
        [delivered.message_id],
        'the message is in its conversation',
      );
      assert.deepEqual(eventsOf(delivered.id), ['notification.sent', 'notification.delivered']);
    });

    it('waits for send_at as scheduled, then goes', async () => {
      const sendAt = new Date(server.clock.now().getTime() + 2 * HOUR).toISOString();
      const response = await create({ to: `+${newCustomer()}`, ...shipping(), send_at: sendAt });
      assert.equal(response.status, 201, response.text);
      assert.equal(response.body.status, 'scheduled');
      await settle(server);
      assert.equal((await get(response.body.id)).status, 'scheduled');
      server.clock.advance(2 * HOUR);
      await settle(server);
      assert.equal((await get(response.body.id)).status, 'delivered');
    });

    it('defaults expires_at by category: authentication 10 minutes, marketing 24 hours', async () => {
      const now = server.clock.now().getTime();
      const code = await create({ to: `+${newCustomer()}`, template: { name: 'login_code', language: 'en_US', parameters: { body: ['482913'] } } });
      assert.equal(code.body.expires_at, new Date(now + 10 * MINUTE).toISOString());
      const sale = await create({ to: `+${newCustomer()}`, template: { id: templates.spring_sale!.id, parameters: { body: ['20%'] } } });
      assert.equal(sale.body.expires_at, new Date(now + 24 * HOUR).toISOString());
      await settle(server);
    });

    it('lists with filters', async () => {
      const contact = await inbound(server, line, { from: newCustomer() });
      const first = await create({ contact_id: contact.contact_id, ...shipping() });
      const list = await server.request('GET', `/v1/notifications?contact_id=${contact.contact_id}`, { token: key });
      assert.deepEqual(
        list.body.data.map((item: { id: string }) => item.id),
        [first.body.id],
      );
      const queued = await server.request('GET', `/v1/notifications?status=queued&template_id=${templates.shipping_notice!.id}`, { token: key });
      assert.ok(queued.body.data.some((item: { id: string }) => item.id === first.body.id));
      await settleSpaced();
      const after = await server.request('GET', `/v1/notifications?status=queued&template_id=${templates.shipping_notice!.id}`, { token: key });
      assert.ok(!after.body.data.some((item: { id: string }) => item.id === first.body.id));
    });
  });

  describe('bad input', () => {
    it('requires an Idempotency-Key', async () => {
      assertError(await create({ to: `+${newCustomer()}`, ...shipping() }, { key: null }), 400, 'idempotency_key_required');
    });

    it('refuses a template that is not approved, with the field at fault', async () => {
      const refused = await create({ to: `+${newCustomer()}`, template: { name: 'under_review', language: 'en_US', parameters: { body: ['Ana'] } } });
      assert.equal(assertError(refused, 409, 'template_not_approved').param, '/template/name');
    });

    it('refuses wrong parameters before anything is stored', async () => {
      const refused = await create({ to: `+${newCustomer()}`, ...shipping({ body: ['Ana'] }) });
      assert.equal(assertError(refused, 400, 'template_parameters_mismatch').param, '/template/parameters/body');
    });

    it('refuses a marketing template to a contact who opted out', async () => {
      const contact = await inbound(server, line, { from: newCustomer() });
      const optOut = await server.request('POST', `/v1/contacts/${contact.contact_id}/consent`, {
        token: key,
        body: { status: 'opted_out', source: 'keyword' },
      });
      assert.equal(optOut.status, 200, optOut.text);
      const refused = await create({ contact_id: contact.contact_id, template: { name: 'spring_sale', language: 'en_US', parameters: { body: ['20%'] } } });
      assert.equal(assertError(refused, 409, 'contact_opted_out').param, '/contact_id');
      assert.equal((await create({ contact_id: contact.contact_id, ...shipping() })).status, 201, 'a utility template still goes');
    });

    it('refuses send_at more than 35 days ahead and expires_at before send_at', async () => {
      const ahead = new Date(server.clock.now().getTime() + 36 * DAY).toISOString();
      assert.equal(assertError(await create({ to: `+${newCustomer()}`, ...shipping(), send_at: ahead }), 400, 'validation_failed').param, '/send_at');
      const sendAt = new Date(server.clock.now().getTime() + HOUR);
      const early = new Date(sendAt.getTime() - MINUTE).toISOString();
      const refused = await create({ to: `+${newCustomer()}`, ...shipping(), send_at: sendAt.toISOString(), expires_at: early });
      assert.equal(assertError(refused, 400, 'validation_failed').param, '/expires_at');
      const tooLong = new Date(sendAt.getTime() + 31 * DAY).toISOString();
      assert.equal(
        assertError(await create({ to: `+${newCustomer()}`, ...shipping(), send_at: sendAt.toISOString(), expires_at: tooLong }), 400, 'validation_failed')
          .param,
        '/expires_at',
      );
    });

    it('needs exactly one recipient and a visible connection', async () => {
      assert.equal(assertError(await create({ ...shipping() }), 400, 'validation_failed').param, '/contact_id');
      const contact = await inbound(server, line, { from: newCustomer() });
      assert.equal(
        assertError(await create({ to: `+${newCustomer()}`, contact_id: contact.contact_id, ...shipping() }), 400, 'validation_failed').param,
        '/to',
      );
      assert.equal(assertError(await create({ to: '0044', ...shipping() }), 400, 'validation_failed').param, '/to');
      const other = await signUp(server);
      const foreign = await createConnection(server, other);
      assert.equal(
        assertError(await create({ to: `+${newCustomer()}`, ...shipping(), connection_id: foreign.id }), 404, 'resource_not_found').param,
        '/connection_id',
      );
    });

    it('keeps another organization’s notification out of sight', async () => {
      const mine = await create({ to: `+${newCustomer()}`, ...shipping() });
      const other = await signUp(server);
      assertError(await server.request('GET', `/v1/notifications/${mine.body.id}`, { token: other.token }), 404, 'resource_not_found');
      assertError(await server.request('POST', `/v1/notifications/${mine.body.id}/cancel`, { token: other.token }), 404, 'resource_not_found');
      await settle(server);
    });
  });

  describe('dedupe_key', () => {
    it('answers the existing notification for 24 hours, then makes a new one', async () => {
      const dedupe = `order-${randomBytes(4).toString('hex')}`;
      const first = await create({ to: `+${newCustomer()}`, ...shipping(), dedupe_key: dedupe });
      assert.equal(first.status, 201);
      const again = await create({ to: `+${newCustomer()}`, ...shipping(), dedupe_key: dedupe });
      assert.equal(again.status, 200);
      assert.equal(again.body.id, first.body.id);
      await settle(server);
      server.clock.advance(DAY + SECOND);
      const later = await create({ to: `+${newCustomer()}`, ...shipping(), dedupe_key: dedupe });
      assert.equal(later.status, 201);
      assert.notEqual(later.body.id, first.body.id);
      assert.equal((await get(first.body.id)).dedupe_key, dedupe, 'the old one keeps its key');
      await settle(server);
    });
  });

  describe('cancel', () => {
    it('cancels a scheduled notification and its send job, with an audit entry', async () => {
      const sendAt = new Date(server.clock.now().getTime() + HOUR).toISOString();
      const created = await create({ to: `+${newCustomer()}`, ...shipping(), send_at: sendAt });
      const canceled = await server.request('POST', `/v1/notifications/${created.body.id}/cancel`, { token: key });
      assert.equal(canceled.status, 200, canceled.text);
      assert.equal(canceled.body.status, 'canceled');
      assert.ok(canceled.body.canceled_at);
      const audit = await server.app.store.db.selectFrom('audit_events').selectAll().where('target_id', '=', created.body.id).execute();
      assert.deepEqual(
        audit.map((entry) => entry.action),
        ['notification.canceled'],
      );
      server.clock.advance(HOUR);
      await settle(server);
      const after = await get(created.body.id);
      assert.equal(after.status, 'canceled');
      assert.equal(after.message_id, null, 'never sent');
      assert.deepEqual(eventsOf(created.body.id), []);
    });

    it('a send job claimed before the cancel committed sees canceled and stops', async () => {
      const created = await create({ to: `+${newCustomer()}`, ...shipping() });
      assert.equal((await server.request('POST', `/v1/notifications/${created.body.id}/cancel`, { token: key })).status, 200);
      // The job as a worker that had claimed it a moment before would run it.
      const signal = new AbortController().signal;
      await server.app.services.notifications.send(created.body.id, {
        id: 'job_claimed',
        attempt: 1,
        maxAttempts: 11,
        signal,
        previousAttemptLost: false,
        inSettle: () => undefined,
        inSettleBatch: () => undefined,
      });
      const after = await get(created.body.id);
      assert.equal(after.status, 'canceled');
      assert.equal(after.message_id, null);
    });

    it('refuses once sent', async () => {
      const created = await create({ to: `+${newCustomer()}`, ...shipping() });
      await settle(server);
      const refused = await server.request('POST', `/v1/notifications/${created.body.id}/cancel`, { token: key });
      assertError(refused, 409, 'invalid_state');
    });
  });

  describe('expiry and replay', () => {
    it('a provider outage holds it until expires_at passes: it ends expired and is never sent afterwards', async () => {
      await server.request('POST', '/sandbox/control/behaviour', { body: { throttle: { code: 80007, estimated_time_to_regain_access: 1 } } });
      try {
        const created = await create({ to: `+${newCustomer()}`, template: { name: 'login_code', language: 'en_US', parameters: { body: ['551234'] } } });
        await settle(server);
        const waiting = await get(created.body.id);
        assert.equal(waiting.status, 'queued', 'put back for its retry');
        assert.equal(waiting.attempts, 1);
        assert.match(waiting.message_id, /^msg_/);
        server.clock.advance(5 * MINUTE);
        await settle(server);
        assert.equal((await get(created.body.id)).status, 'queued');
        server.clock.advance(5 * MINUTE);
        await settle(server);
        const expired = await get(created.body.id);
        assert.equal(expired.status, 'expired');
        assert.ok(expired.expired_at);
        await server.request('POST', '/sandbox/control/behaviour', { body: { throttle: null } });
        server.clock.advance(HOUR);
        await settle(server);
        const message = await server.request('GET', `/v1/messages/${expired.message_id}`, { token: key });
        assert.equal(message.body.status, 'failed', 'its message ends failed, never sent');
        assert.equal(message.body.provider_message_id, null);
        assert.deepEqual(eventsOf(created.body.id), ['notification.expired']);

        // Replay: a new notification, linked both ways; only once, and never of a delivered one.
        const replay = await server.request('POST', `/v1/notifications/${created.body.id}/replay`, {
          token: key,
          body: {},
          headers: { 'idempotency-key': idempotencyKey() },
        });
        assert.equal(replay.status, 201, replay.text);
        assert.equal(replay.body.replay_of, created.body.id);
        assert.equal((await get(created.body.id)).replayed_by, replay.body.id);
        const twice = await server.request('POST', `/v1/notifications/${created.body.id}/replay`, {
          token: key,
          body: {},
          headers: { 'idempotency-key': idempotencyKey() },
        });
        assertError(twice, 409, 'invalid_state');
        await settle(server);
        assert.equal((await get(replay.body.id)).status, 'delivered');
        const ofDelivered = await server.request('POST', `/v1/notifications/${replay.body.id}/replay`, {
          token: key,
          body: {},
          headers: { 'idempotency-key': idempotencyKey() },
        });
        assertError(ofDelivered, 409, 'invalid_state');
      } finally {
        await server.request('POST', '/sandbox/control/behaviour', { body: { throttle: null } });
      }
    });

    it('a scheduled notification whose worker never ran expires by its timer', async () => {
      const created = await create({ to: `+${newCustomer()}`, ...shipping(), expires_at: new Date(server.clock.now().getTime() + MINUTE).toISOString() });
      // The send job is lost (an outage of the worker fleet, say); the timer still ends it.
      await server.app.store.db.deleteFrom('jobs').where('dedupe_key', '=', `notification.send:${created.body.id}`).execute();
      server.clock.advance(MINUTE);
      await settle(server);
      assert.equal((await get(created.body.id)).status, 'expired');
      assert.deepEqual(eventsOf(created.body.id), ['notification.expired']);
    });
  });

  describe('failures at send time', () => {
    it('a template paused after creation fails the notification, with why', async () => {
      const sendAt = new Date(server.clock.now().getTime() + HOUR).toISOString();
      const created = await create({
        to: `+${newCustomer()}`,
        template: { name: 'spring_sale', language: 'en_US', parameters: { body: ['10%'] } },
        send_at: sendAt,
      });
      assert.equal(created.status, 201, created.text);
      await server.request('POST', '/sandbox/control/template-status', {
        body: { template_id: templates.spring_sale!.provider_template_id, status: 'PAUSED' },
      });
      await settle(server);
      server.clock.advance(HOUR);
      await settle(server);
      const failed = await get(created.body.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, 'template_not_approved');
      assert.equal(failed.message_id, null);
      assert.deepEqual(eventsOf(created.body.id), ['notification.failed']);
      const refused = await create({ to: `+${newCustomer()}`, template: { name: 'spring_sale', language: 'en_US', parameters: { body: ['10%'] } } });
      assertError(refused, 409, 'template_not_approved');
      assert.equal(refused.body.error.template_status, 'paused', 'a paused template is refused at creation too');
      await server.request('POST', '/sandbox/control/template-status', {
        body: { template_id: templates.spring_sale!.provider_template_id, status: 'APPROVED' },
      });
      await settle(server);
    });

    it('a refusal by the provider fails it with the provider’s code', async () => {
      await server.request('POST', '/sandbox/control/behaviour', { body: { fail_next: { code: 131009, details: 'Parameter value is not valid' } } });
      const created = await create({ to: `+${newCustomer()}`, ...shipping() });
      await settle(server);
      const failed = await get(created.body.id);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, '131009');
      assert.deepEqual(eventsOf(created.body.id), ['notification.failed']);
    });
  });

  describe('batches', () => {
    const recipients = (count: number) =>
      Array.from({ length: count }, (_, index) => ({ to: `+${newCustomer()}`, parameters: { body: ['Ana', `B-${index}`] } }));

    it('all_or_nothing: one bad recipient refuses the whole batch, naming it', async () => {
      const list = recipients(3);
      list[1]!.parameters = { body: ['only one'] };
      const before = await countJobs('notification.send');
      const refused = await batch({ template: { name: 'shipping_notice', language: 'en_US' }, recipients: list });
      const error = assertError(refused, 400, 'validation_failed');
      assert.equal(error.param, '/recipients/1/parameters/body');
      assert.equal(error.details[0].code, 'template_parameters_mismatch');
      assert.equal(await countJobs('notification.send'), before, 'nothing was created');
    });

    it('partial: the good ones are created, the bad one listed; progress counts by status', async () => {
      const list = recipients(3);
      list[2]!.parameters = { body: ['only one'] };
      const created = await batch({ template: { name: 'shipping_notice', language: 'en_US' }, recipients: list, mode: 'partial' });
      assert.equal(created.status, 201, created.text);
      assert.match(created.body.id, /^ntb_/);
      assert.equal(created.body.notification_ids.length, 2);
      assert.deepEqual(
        created.body.errors.map((error: { index: number; code: string }) => [error.index, error.code]),
        [[2, 'template_parameters_mismatch']],
      );
      assert.equal(created.body.counts.queued, 2);
      await settleSpaced();
      const read = await server.request('GET', `/v1/notifications/batches/${created.body.id}`, { token: key });
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.counts.delivered, 2);
      const listed = await server.request('GET', `/v1/notifications?batch_id=${created.body.id}`, { token: key });
      assert.equal(listed.body.data.length, 2);
    });

    it('refuses 1,001 recipients', async () => {
      const refused = await batch({ template: { name: 'shipping_notice', language: 'en_US' }, recipients: recipients(1001) });
      assert.equal(assertError(refused, 400, 'validation_failed').param, '/recipients');
    });

    it('spaces its sends at the number’s ceiling, and an authentication notification goes first', async () => {
      const sendAt = new Date(server.clock.now().getTime() + HOUR);
      const created = await batch({
        template: { name: 'spring_sale', language: 'en_US' },
        recipients: Array.from({ length: 40 }, () => ({ to: `+${newCustomer()}`, parameters: { body: ['5%'] } })),
        send_at: sendAt.toISOString(),
      });
      assert.equal(created.status, 201, created.text);
      const rows = await server.app.store.db
        .selectFrom('notifications')
        .select(['due_at', 'batch_index'])
        .where('batch_id', '=', created.body.id)
        .orderBy('batch_index')
        .execute();
      const gaps = rows.slice(1).map((row, index) => new Date(row.due_at).getTime() - new Date(rows[index]!.due_at).getTime());
      const interval = server.app.services.notifications && (1000 + 25) / line.throughput_per_second;
      for (const gap of gaps) assert.ok(Math.abs(gap - interval) <= 1, `sends ${interval} ms apart, got ${gap}`);
      assert.equal(rows[0]!.due_at, sendAt.toISOString());
      // A second batch for the same moment queues after the first instead of sharing the ceiling.
      const second = await batch({
        template: { name: 'spring_sale', language: 'en_US' },
        recipients: [{ to: `+${newCustomer()}`, parameters: { body: ['5%'] } }],
        send_at: sendAt.toISOString(),
      });
      const [secondRow] = await server.app.store.db.selectFrom('notifications').select('due_at').where('batch_id', '=', second.body.id).execute();
      assert.ok(secondRow!.due_at > rows.at(-1)!.due_at, 'after the first batch');
      // A one-time code for the same moment is not queued behind either.
      const code = await create({
        to: `+${newCustomer()}`,
        template: { name: 'login_code', language: 'en_US', parameters: { body: ['120044'] } },
        send_at: sendAt.toISOString(),
      });
      const [codeRow] = await server.app.store.db.selectFrom('notifications').select('due_at').where('id', '=', code.body.id).execute();
      assert.equal(codeRow!.due_at, sendAt.toISOString());
      assert.equal(created.body.counts.scheduled, 40);
      server.clock.advance(HOUR);
      // The first send job at send_at queues the rest of the batch: they wait their turn in the lane.
      await server.app.worker.drain();
      const waiting = await server.request('GET', `/v1/notifications/batches/${created.body.id}`, { token: key });
      assert.equal(waiting.body.counts.scheduled, 0);
      await settleSpaced();
      const done = await server.request('GET', `/v1/notifications/batches/${created.body.id}`, { token: key });
      assert.equal(done.body.counts.delivered, 40);
    });
  });
});
