/**
 * The worked examples of docs/automations.md, read from the page itself (the JSON block after each
 * `<!-- example: name -->` marker), created, deployed and enabled through the API of a listening
 * server, and run: a customer's messages through the sandbox on the manual clock for the
 * opening-hours auto-reply, dry runs and one live run for the order-status flow, a shop's API on
 * loopback for the refund an approver lets through. If the page and the
 * service drift apart, this fails.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { automationReader } from '../../../test/automations.ts';
import { startApi } from '../../../test/fake-api.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { assertError, createConnection, createKey, inbound, newCustomer, settle, signUp } from '../../../test/factories.ts';

type Json = Record<string, any>;

const page = readFileSync(new URL('../../../docs/automations.md', import.meta.url), 'utf8');

/** The JSON block that follows `<!-- example: name -->` on the page. */
function example(name: string): Json {
  const match = new RegExp(`<!-- example: ${name} -->\\n\`\`\`json\\n([\\s\\S]*?)\\n\`\`\``).exec(page);
  assert.ok(match, `docs/automations.md has a json block marked <!-- example: ${name} -->`);
  return JSON.parse(match[1]!) as Json;
}

const types = (events: Json[]) => events.map((event) => event.type);

describe('the worked examples of docs/automations.md', () => {
  let server: TestServer;
  /** An organization key, as the page's curl commands use: it outlives the manual clock's hours. */
  let key: string;
  const suite = suiteScope();
  const { number, runsOf, eventsOf, outbound } = automationReader(
    () => server,
    () => key,
  );

  before(async () => {
    server = await startServer(suite);
    const owner = await signUp(server);
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });

  /** The page's three calls: create with the definition as version 1, deploy it, enable; each answer as the page shows it. */
  async function createDeployEnable(connectionId: string, name: string, definition: Json): Promise<Json> {
    const created = await server.request('POST', '/v1/automations', {
      token: key,
      body: { name, connection_id: connectionId, definition, message: 'First version' },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.status, 'draft');
    assert.equal(created.body.latest_version, 1);
    assert.equal(created.body.deployed_version, null);
    const deployed = await server.request('POST', `/v1/automations/${created.body.id}/deploy`, { token: key, body: { version: 1 } });
    assert.equal(deployed.status, 200, deployed.text);
    assert.equal(deployed.body.object, 'automation_deployment');
    assert.deepEqual(deployed.body.in_flight, { kept: 0, canceled: 0, migrated: 0 });
    assert.equal(deployed.body.automation.status, 'draft');
    assert.deepEqual(deployed.body.automation.trigger, { type: definition.trigger.type, event: null });
    const enabled = await server.request('POST', `/v1/automations/${created.body.id}/enable`, { token: key });
    assert.equal(enabled.status, 200, enabled.text);
    assert.equal(enabled.body.status, 'enabled');
    return enabled.body;
  }

  async function controlOf(conversationId: string): Promise<string> {
    return (await server.request('GET', `/v1/conversations/${conversationId}`, { token: key })).body.control;
  }

  describe('opening hours', () => {
    const definition = example('opening-hours');
    let automation: Json;
    let connection: { id: string; phone_number_id: string };

    before(async () => {
      connection = await number();
      automation = await createDeployEnable(connection.id, 'Opening hours', definition);
    });

    /** A new customer writes; answers the run that message started. */
    async function customerWrites(text: string, from = newCustomer()) {
      const message = await inbound(server, connection, { from, text });
      const run = (await runsOf(automation.id)).find((each) => each.trigger.message_id === message.id);
      assert.ok(run, `the message ${message.id} started a run`);
      return { message, run };
    }

    it('on a Monday at 14:00 in Berlin: the welcome text, then the conversation handed to an agent', async () => {
      server.clock.set('2026-06-01T12:00:00.000Z');
      const customer = newCustomer();
      const { message, run } = await customerWrites('Hello?', customer);
      assert.equal(run.status, 'completed');
      assert.equal(run.outcome, 'handed_off');
      assert.equal(run.steps_executed, 3);
      assert.deepEqual(
        (await outbound(message.conversation_id)).map((sent) => sent.text.body),
        ['Thanks for your message! A colleague will answer you in a moment.'],
      );
      assert.equal(await controlOf(message.conversation_id), 'agent');

      const events = await eventsOf(run.id);
      assert.deepEqual(types(events), [
        'run.created',
        'run.started',
        'step.started',
        'step.completed',
        'step.started',
        'effect.message_queued',
        'step.completed',
        'step.started',
        'effect.handed_off',
        'run.completed',
      ]);
      assert.equal(events[0]!.data.claimed_control, true);
      assert.deepEqual(events[3]!.data, { branch: 0 });
      assert.equal(events[8]!.data.note, 'Opening hours. The customer wrote: Hello?');

      // The agent has the conversation: the customer's next message starts nothing.
      const next = await inbound(server, connection, { from: customer, text: 'Anyone there?' });
      assert.equal(next.conversation_id, message.conversation_id);
      assert.equal((await runsOf(automation.id)).filter((each) => each.conversation_id === message.conversation_id).length, 1);
    });

    it('at 21:00 in Berlin: the closed text, and the conversation back under api control', async () => {
      server.clock.set('2026-06-01T19:00:00.000Z');
      const { message, run } = await customerWrites('Are you open?');
      assert.equal(run.status, 'completed');
      assert.equal(run.outcome, 'closed');
      const [sent] = await outbound(message.conversation_id);
      assert.match(sent!.text.body, /^Thanks for your message! We are closed now\./);
      assert.equal(await controlOf(message.conversation_id), 'api');
    });

    it('on a Saturday at noon in Berlin: closed too', async () => {
      server.clock.set('2026-06-06T10:00:00.000Z');
      const { run } = await customerWrites('Hello?');
      assert.equal(run.outcome, 'closed');
    });
  });

  describe('order status', () => {
    const definition = example('order-status');
    let automation: Json;
    let requests = 0;

    before(async () => {
      const connection = await number();
      automation = await createDeployEnable(connection.id, 'Order status', definition);
    });

    const trigger = (body: Json, idempotencyKey = `docs-order-${requests++}`) =>
      server.request('POST', '/v1/runs', { token: key, headers: { 'idempotency-key': idempotencyKey }, body: { automation_id: automation.id, ...body } });

    it('a dry run with the reply "Yes" answers the run and the log the page shows', async () => {
      const shown = example('order-status-dry-run');
      const dry = await trigger({
        version: 1,
        to: '+447700900123',
        input: { order_id: 'A-1042' },
        dry_run: true,
        simulate: { replies: [{ text: 'Yes', after_seconds: 300 }] },
      });
      assert.equal(dry.status, 201, dry.text);
      for (const field of ['object', 'dry_run', 'status', 'outcome', 'steps_executed']) assert.deepEqual(dry.body[field], shown[field], field);
      assert.equal(dry.body.variables.answer.text.body, shown.variables.answer.text.body);
      assert.deepEqual(
        dry.body.events.map(({ seq, type, step_id, data }: Json) => ({ seq, type, step_id, data })),
        shown.events,
      );
      const at = (type: string) => Date.parse(dry.body.events.find((event: Json) => event.type === type && event.step_id === 'ask').at);
      assert.equal(at('wait.replied') - at('step.started'), 300_000);
    });

    it('a dry run with another answer hands over to an agent, with the note the page quotes', async () => {
      const dry = await trigger({
        version: 1,
        to: '+447700900123',
        input: { order_id: 'A-1042' },
        dry_run: true,
        simulate: { replies: [{ text: 'Not tomorrow' }] },
      });
      assert.equal(dry.status, 201, dry.text);
      assert.equal(dry.body.outcome, 'handed_off');
      const handoff = dry.body.events.find((event: Json) => event.type === 'effect.handed_off');
      assert.equal(handoff.data.note, 'Order A-1042: the customer answered Not tomorrow');
    });

    it('a dry run without replies times out after an hour: no_answer', async () => {
      const dry = await trigger({ version: 1, to: '+447700900123', input: { order_id: 'A-1042' }, dry_run: true });
      assert.equal(dry.status, 201, dry.text);
      assert.equal(dry.body.outcome, 'no_answer');
      const at = (type: string) => Date.parse(dry.body.events.find((event: Json) => event.type === type && event.step_id === 'ask').at);
      assert.equal(at('wait.timed_out') - at('step.started'), 3_600_000);
    });

    it('an input without order_id is refused, naming /input', async () => {
      const error = assertError(await trigger({ to: `+${newCustomer()}`, input: {} }), 400, 'validation_failed');
      assert.equal(error.param, '/input');
      assert.equal(error.message, "/input does not match the automation's input_schema: must have required property 'order_id'.");
    });

    it('a live run: the template to a closed window, the wait, and "yes" confirmed', async () => {
      const customer = newCustomer();
      const body = { to: `+${customer}`, input: { order_id: 'A-1042' } };
      const started = await trigger(body, `order-A-1042-shipped-${customer}`);
      assert.equal(started.status, 201, started.text);
      assert.equal(started.body.status, 'queued');
      assert.deepEqual(started.body.trigger, { type: 'api' });
      assert.deepEqual(started.body.input, { order_id: 'A-1042' });
      const again = await trigger(body, `order-A-1042-shipped-${customer}`);
      assert.equal(again.body.id, started.body.id, 'the same Idempotency-Key answers the same run');

      await settle(server);
      let run = (await server.request('GET', `/v1/runs/${started.body.id}`, { token: key })).body;
      assert.equal(run.status, 'waiting');
      assert.equal(run.waiting_for.type, 'reply');
      const [template] = await outbound(run.conversation_id);
      assert.equal(template!.type, 'template');
      assert.equal(template!.template.name, 'hello_world');
      assert.ok(types(await eventsOf(run.id)).includes('step.skipped'), 'the closed window skipped the text');

      // The page's last dry run: the same contact, its window still closed, shows the skip and the template.
      const dry = await trigger({ version: 1, contact_id: run.contact_id, input: { order_id: 'A-1042' }, dry_run: true });
      assert.equal(dry.status, 201, dry.text);
      const skipped = dry.body.events.find((event: Json) => event.type === 'step.skipped');
      assert.equal(skipped.step_id, 'shipped');
      assert.deepEqual(skipped.data, { reason: 'window_closed' });
      const sends = dry.body.events.filter((event: Json) => event.type === 'effect.message_queued');
      assert.equal(sends[0].step_id, 'shipped_template');
      assert.equal(sends[0].data.content.template.name, 'hello_world');

      await inbound(server, { phone_number_id: (await connectionOf(run.connection_id)).phone_number_id }, { from: customer, text: 'yes' });
      run = (await server.request('GET', `/v1/runs/${started.body.id}`, { token: key })).body;
      assert.equal(run.status, 'completed');
      assert.equal(run.outcome, 'confirmed');
      assert.equal(run.variables.answer.text.body, 'yes');
      const texts = (await outbound(run.conversation_id)).filter((sent) => sent.type === 'text').map((sent) => sent.text.body);
      assert.deepEqual(texts, ['Great, see you tomorrow with order A-1042!']);
    });
  });

  describe('a refund approved before the call', () => {
    it('asks first, then calls the shop with the request the approver saw, and tells the customer', async () => {
      const shop = await startApi(suite);
      shop.json(201, { refund_id: 're_1' });
      // An organization of its own, which requires approvals for connector calls: the page's point.
      const admin = await signUp(server);
      const orgKey = (await createKey(server, admin.token, { kind: 'organization', mode: 'live' })).key;
      const setting = await server.request('PATCH', '/v1/organization', {
        token: admin.token,
        body: { settings: { require_approval_for_risky_actions: true } },
      });
      assert.equal(setting.status, 200, setting.text);
      const connection = await createConnection(server, { token: orgKey });
      const account = await server.request('POST', '/v1/connector-accounts', {
        token: orgKey,
        body: { connector: 'http_bearer', name: 'Shop API', fields: { base_url: `${shop.url}/api`, token: 'shp_0123456789abcdef9f2c', test_path: '/health' } },
      });
      assert.equal(account.status, 201, account.text);
      assert.equal(account.body.secret_hint, '…9f2c');
      const definition = JSON.parse(JSON.stringify(example('refund')).replaceAll('cna_…', account.body.id)) as Json;
      const created = await server.request('POST', '/v1/automations', { token: orgKey, body: { name: 'Refunds', connection_id: connection.id, definition } });
      assert.equal(created.status, 201, created.text);
      for (const [action, body] of [
        ['deploy', { version: 1 }],
        ['enable', undefined],
      ] as const) {
        const answer = await server.request('POST', `/v1/automations/${created.body.id}/${action}`, { token: orgKey, ...(body ? { body } : {}) });
        assert.equal(answer.status, 200, answer.text);
      }
      const first = await inbound(server, connection, { text: 'I want my money back', name: 'Ana' });
      const started = await server.request('POST', '/v1/runs', {
        token: orgKey,
        headers: { 'idempotency-key': `refund-${first.id}` },
        body: { automation_id: created.body.id, conversation_id: first.conversation_id, input: { order_id: 'A-1042', amount: 12.5 } },
      });
      assert.equal(started.status, 201, started.text);
      await settle(server);
      const calls = () => shop.seen.filter((request) => request.url.includes('/refunds'));
      assert.equal(calls().length, 0, 'nothing is called before a person approves');
      const approvals = await server.request('GET', `/v1/approvals?run_id=${started.body.id}`, { token: orgKey });
      const approval = approvals.body.data[0];
      assert.equal(approval.status, 'pending');
      assert.equal(approval.title, 'Refund 12.5 EUR on order A-1042?');
      assert.equal(approval.summary, 'Asked by Ana');

      const approved = await server.request('POST', `/v1/approvals/${approval.id}/approve`, { token: admin.token, body: { comment: 'fine' } });
      assert.equal(approved.status, 200, approved.text);
      await settle(server);
      const [call] = calls();
      assert.ok(call, 'the shop was called once approved');
      assert.equal(calls().length, 1);
      assert.equal(call.method, 'POST');
      assert.equal(call.url, '/api/orders/A-1042/refunds');
      assert.equal(call.headers.authorization, 'Bearer shp_0123456789abcdef9f2c');
      assert.match(String(call.headers['idempotency-key']), new RegExp(`^${started.body.id}:\\d+$`));
      assert.deepEqual(JSON.parse(call.body), { amount: 12.5 });
      const run = (await server.request('GET', `/v1/runs/${started.body.id}`, { token: orgKey })).body;
      assert.equal(run.status, 'completed');
      assert.equal(run.outcome, 'answered');
      const texts = (await server.request('GET', `/v1/messages?conversation_id=${first.conversation_id}&order=asc`, { token: orgKey })).body.data
        .filter((message: Json) => message.direction === 'outbound')
        .map((message: Json) => message.text.body);
      assert.deepEqual(texts, ['Your refund for order A-1042 is on its way (re_1).']);
    });
  });

  async function connectionOf(id: string): Promise<{ phone_number_id: string }> {
    return (await server.request('GET', `/v1/connections/${id}`, { token: key })).body;
  }
});
