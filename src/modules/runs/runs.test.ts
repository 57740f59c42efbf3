/**
 * Runs end to end, through a listening server, the sandbox provider and its webhooks: a customer's
 * message starts a run, the run answers through the normal send path, waits for the reply (or its
 * time-out, on the manual clock), and ends handing the conversation back. Then what a run must
 * survive: an early reply, a reply racing its time-out, control taken and given back, a member's
 * lock, an echo from the owner's app, two automations wanting one message, a deploy while runs
 * wait, an automation answering an automation, and the threshold that disables a failing one.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, createKey, inbound, newCustomer, settle, signUp, type SignedUp } from '../../../test/factories.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';
import { automationReader } from '../../../test/automations.ts';

type Json = Record<string, any>;

const reply = (extra: Json = {}) => ({
  id: 'reply',
  type: 'send_message',
  text: 'Hi {{ contact.profile_name }}, you said: {{ message.text.body }}',
  next: 'ask',
  ...extra,
});
const ask = (extra: Json = {}) => ({
  id: 'ask',
  type: 'wait_for_reply',
  timeout_seconds: 3600,
  save_as: 'answer',
  branches: { replied: 'thanks', timeout: 'nudge' },
  ...extra,
});
const thanks = { id: 'thanks', type: 'send_message', text: 'Thanks: {{ vars.answer.text.body }}', next: 'done' };
const nudge = { id: 'nudge', type: 'end', outcome: 'no_answer' };
const done = { id: 'done', type: 'end' };
/** The three-step conversation: reply, wait for an answer (an hour), thank or give up. */
const replyFlow = (trigger: Json = { type: 'message_received' }, extra: Json = {}) => ({
  trigger,
  start: 'reply',
  steps: [reply(), ask(), thanks, nudge, done],
  ...extra,
});
/** The same, started through the API: no message started it, so the first step asks rather than echoes. */
const askFlow = (extra: Json = {}) => ({
  ...replyFlow({ type: 'api' }, extra),
  steps: [reply({ text: 'Hi {{ contact.profile_name }}, how can we help?' }), ask(), thanks, nudge, done],
});

describe('runs', () => {
  let server: TestServer;
  let owner: SignedUp;
  let receiver: Receiver;
  /** An organization key: the manual clock moves hours ahead, past a dashboard token's 15 minutes. */
  let key: string;
  const suite = suiteScope();
  // Each test its own number, so that automations of one test never see another's messages.
  const { number, automationOn, runsOf, eventsOf, outbound, conversation } = automationReader(
    () => server,
    () => key,
  );

  async function onlyRun(automationId: string): Promise<Json> {
    const runs = await runsOf(automationId);
    assert.equal(runs.length, 1, JSON.stringify(runs));
    return runs[0]!;
  }

  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
    receiver = await startReceiver(suite);
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    const endpoint = await server.request('POST', '/v1/webhook-endpoints', {
      token: key,
      body: { url: receiver.url, events: ['automation.run_started', 'automation.run_finished', 'automation.run_failed', 'automation.auto_disabled'] },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
  });

  /** An automation on one number, with its definition deployed and enabled. */
  function advance(seconds: number) {
    server.clock.advance(seconds * 1000);
  }

  it('a message starts a run that answers, waits for the reply and ends, handing the conversation back', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, replyFlow());
    const customer = newCustomer();
    const first = await inbound(server, connection, { from: customer, text: 'Where is my order?', name: 'Ana' });

    const run = await onlyRun(automation.id);
    assert.equal(run.status, 'waiting');
    assert.equal(run.current_step_id, 'ask');
    assert.equal(run.waiting_for.type, 'reply');
    assert.deepEqual(run.trigger, { type: 'message_received', message_id: first.id });
    assert.equal((await conversation(first.conversation_id)).control, 'automation');
    const answer = (await outbound(first.conversation_id))[0]!;
    assert.equal(answer.text.body, 'Hi Ana, you said: Where is my order?');
    assert.equal(answer.status, 'read', 'it went through the sandbox like any send');
    assert.equal(answer.metadata.run_id, run.id);

    await inbound(server, connection, { from: customer, text: 'Order 42' });
    const ended = (await server.request('GET', `/v1/runs/${run.id}`, { token: key })).body;
    assert.equal(ended.status, 'completed');
    assert.equal(ended.outcome, 'completed');
    assert.equal(ended.variables.answer.text.body, 'Order 42');
    assert.equal(ended.steps_executed, 4);
    const sent = await outbound(first.conversation_id);
    assert.deepEqual(
      sent.map((message) => message.text.body),
      ['Hi Ana, you said: Where is my order?', 'Thanks: Order 42'],
    );
    assert.equal((await conversation(first.conversation_id)).control, 'api');

    const types = (await eventsOf(run.id)).map((event) => event.type);
    assert.deepEqual(types.slice(0, 2), ['run.created', 'run.started']);
    assert.ok(types.includes('wait.replied'));
    assert.equal(types.at(-1), 'run.completed');
  });

  it('sends the run events to webhook endpoints', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, replyFlow());
    await inbound(server, connection, { text: 'hello' });
    const run = await onlyRun(automation.id);
    await server.request('POST', `/v1/runs/${run.id}/cancel`, { token: key });
    await settle(server);
    const types = receiver.received
      .map((request) => JSON.parse(request.body) as Json)
      .filter((event) => event.data.object.id === run.id)
      .map((event) => `${event.type}:${event.data.object.status}`);
    assert.deepEqual(types, ['automation.run_started:running', 'automation.run_finished:canceled']);
  });

  it('a wait that hears nothing times out onto its timeout branch', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, replyFlow());
    await inbound(server, connection, { text: 'hello' });
    advance(3599);
    await settle(server);
    assert.equal((await onlyRun(automation.id)).status, 'waiting');
    advance(1);
    await settle(server);
    const run = await onlyRun(automation.id);
    assert.equal(run.status, 'completed');
    assert.equal(run.outcome, 'no_answer');
    assert.ok((await eventsOf(run.id)).some((event) => event.type === 'wait.timed_out'));
  });

  it('a reply and a time-out racing: exactly one wins', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, replyFlow());
    const customer = newCustomer();
    const first = await inbound(server, connection, { from: customer, text: 'hello' });
    // The deadline passes, but the reply is processed before the wake-up job runs.
    advance(3601);
    const response = await server.request('POST', '/sandbox/control/inbound', {
      body: { phone_number_id: connection.phone_number_id, from: customer, type: 'text', text: 'late but here' },
    });
    assert.equal(response.status, 200, response.text);
    await settle(server);
    const run = await onlyRun(automation.id);
    const types = (await eventsOf(run.id)).map((event) => event.type);
    assert.equal(types.filter((type) => type === 'wait.replied' || type === 'wait.timed_out').length, 1, types.join(', '));
    assert.equal(run.status, 'completed');
    const sent = await outbound(first.conversation_id);
    assert.equal(sent.length, types.includes('wait.replied') ? 2 : 1);
  });

  it('a reply that arrives before the run reaches its wait is not missed', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, askFlow());
    const customer = newCustomer();
    const first = await inbound(server, connection, { from: customer, text: 'hello' });
    const started = await server.request('POST', '/v1/runs', {
      token: key,
      headers: { 'idempotency-key': `early-${customer}` },
      body: { automation_id: automation.id, conversation_id: first.conversation_id },
    });
    assert.equal(started.status, 201, started.text);
    assert.equal(started.body.status, 'queued');
    // The customer writes before the run has even sent its first message.
    await server.request('POST', '/sandbox/control/inbound', {
      body: { phone_number_id: connection.phone_number_id, from: customer, type: 'text', text: 'early bird' },
    });
    await settle(server);
    const run = (await server.request('GET', `/v1/runs/${started.body.id}`, { token: key })).body;
    assert.equal(run.status, 'completed', JSON.stringify(await eventsOf(run.id)));
    assert.equal(run.variables.answer.text.body, 'early bird');
  });

  it('pauses before a side effect when an agent has taken the conversation, and resumes when control comes back', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, askFlow());
    const first = await inbound(server, connection, { text: 'hello' });
    const started = await server.request('POST', '/v1/runs', {
      token: key,
      headers: { 'idempotency-key': `pause-${first.id}` },
      body: { automation_id: automation.id, conversation_id: first.conversation_id },
    });
    assert.equal(started.status, 201, started.text);
    // The agent takes over after the run was queued, before its step runs.
    const taken = await server.request('POST', `/v1/conversations/${first.conversation_id}/control`, { token: key, body: { control: 'agent' } });
    assert.equal(taken.status, 200, taken.text);
    await settle(server);
    let run = (await server.request('GET', `/v1/runs/${started.body.id}`, { token: key })).body;
    assert.equal(run.status, 'paused');
    assert.equal(run.waiting_for.type, 'control');
    assert.equal((await outbound(first.conversation_id)).length, 0, 'nothing was sent');

    const back = await server.request('POST', `/v1/conversations/${first.conversation_id}/control`, { token: key, body: { control: 'automation' } });
    assert.equal(back.status, 200, back.text);
    await settle(server);
    run = (await server.request('GET', `/v1/runs/${started.body.id}`, { token: key })).body;
    assert.equal(run.status, 'waiting');
    assert.equal((await outbound(first.conversation_id)).length, 1, 'sent once, after control came back');
  });

  it("pauses under a member's lock", async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, askFlow());
    const first = await inbound(server, connection, { text: 'hello' });
    const agent = await addMember(server, owner.organizationId, 'agent');
    const started = await server.request('POST', '/v1/runs', {
      token: key,
      headers: { 'idempotency-key': `lock-${first.id}` },
      body: { automation_id: automation.id, conversation_id: first.conversation_id },
    });
    assert.equal(started.status, 201, started.text);
    const lock = await server.request('POST', `/v1/conversations/${first.conversation_id}/lock`, { token: agent.token, body: {} });
    assert.equal(lock.status, 201, lock.text);
    await settle(server);
    let run = (await server.request('GET', `/v1/runs/${started.body.id}`, { token: key })).body;
    assert.equal(run.status, 'paused');
    assert.equal((await outbound(first.conversation_id)).length, 0);
    // The member lets go: the run takes up its step again.
    const released = await server.request('DELETE', `/v1/conversations/${first.conversation_id}/lock`, { token: agent.token });
    assert.equal(released.status, 200, released.text);
    await settle(server);
    run = (await server.request('GET', `/v1/runs/${started.body.id}`, { token: key })).body;
    assert.equal(run.status, 'waiting');
    assert.equal((await outbound(first.conversation_id)).length, 1);
  });

  it("an echo from the owner's app hands the conversation to the app and pauses the run", async () => {
    const connection = await number({ coexistence: true });
    const automation = await automationOn(connection.id, {
      trigger: { type: 'message_received' },
      start: 'later',
      steps: [{ id: 'later', type: 'delay', seconds: 60, next: 'reply' }, reply({ next: 'done' }), done],
    });
    const customer = newCustomer();
    const first = await inbound(server, connection, { from: customer, text: 'hello' });
    const echo = await server.request('POST', '/sandbox/control/echo', {
      body: { phone_number_id: connection.phone_number_id, to: customer, type: 'text', text: 'I got this' },
    });
    assert.equal(echo.status, 200, echo.text);
    await settle(server);
    assert.equal((await conversation(first.conversation_id)).control, 'app');
    advance(60);
    await settle(server);
    const run = await onlyRun(automation.id);
    assert.equal(run.status, 'paused');
    assert.equal((await outbound(first.conversation_id)).filter((message) => !message.echo).length, 0);
  });

  it('handoff ends the run with the conversation handed to an agent', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, {
      trigger: { type: 'message_received' },
      start: 'tag',
      steps: [
        { id: 'tag', type: 'set_tags', add: ['needs-human'], next: 'human' },
        { id: 'human', type: 'handoff', note: 'Customer said {{ message.text.body }}' },
      ],
    });
    const first = await inbound(server, connection, { text: 'agent please' });
    const run = await onlyRun(automation.id);
    assert.equal(run.status, 'completed');
    assert.equal(run.outcome, 'handed_off');
    const thread = await conversation(first.conversation_id);
    assert.equal(thread.control, 'agent');
    assert.deepEqual(thread.tags, ['needs-human']);
  });

  it('two automations matching one message start one run: the oldest', async () => {
    const connection = await number();
    const older = await automationOn(connection.id, replyFlow(), 'Older');
    const newer = await automationOn(connection.id, replyFlow(), 'Newer');
    await inbound(server, connection, { text: 'hello' });
    assert.equal((await runsOf(older.id)).length, 1);
    assert.equal((await runsOf(newer.id)).length, 0);
  });

  it('a trigger filter decides which automation starts', async () => {
    const connection = await number();
    const refunds = await automationOn(connection.id, replyFlow({ type: 'message_received', filter: 'message.text.body.contains("refund")' }), 'Refunds');
    const rest = await automationOn(connection.id, replyFlow(), 'Everything else');
    await inbound(server, connection, { text: 'I want a refund' });
    await inbound(server, connection, { text: 'hello' });
    assert.equal((await runsOf(refunds.id)).length, 1);
    assert.equal((await runsOf(rest.id)).length, 1);
  });

  it('an automation answering an automation is stopped by the loop guard', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, {
      trigger: { type: 'message_received' },
      start: 'echo',
      steps: [
        { id: 'echo', type: 'send_message', text: 'You said {{ message.text.body }}', next: 'listen' },
        { id: 'listen', type: 'wait_for_reply', timeout_seconds: 60, branches: { replied: 'echo' } },
      ],
    });
    // The customer is a bot that answers every message at once.
    const customer = newCustomer();
    for (let index = 0; index < 12; index++) await inbound(server, connection, { from: customer, text: `bot ${index}` });
    // The first run sends ten messages in the minute and fails at the eleventh; the runs the bot's
    // later messages start fail at their first send, sending nothing.
    const runs = await runsOf(automation.id);
    assert.ok(runs.length >= 2);
    assert.ok(runs.every((run) => run.status === 'failed' && run.error.code === 'loop_guard'));
    assert.equal((await outbound(runs[0]!.conversation_id)).length, 10);
  });

  it('deploying while runs wait: keep, cancel or migrate them', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, replyFlow());
    const writeV = async (basedOn: number) => {
      const written = await server.request('POST', `/v1/automations/${automation.id}/versions`, {
        token: key,
        body: { definition: replyFlow(), based_on_version: basedOn },
      });
      assert.equal(written.status, 201, written.text);
    };
    const deploy = async (version: number, inFlight: string) => {
      const response = await server.request('POST', `/v1/automations/${automation.id}/deploy`, { token: key, body: { version, in_flight: inFlight } });
      assert.equal(response.status, 200, response.text);
      return response.body.in_flight;
    };
    await inbound(server, connection, { text: 'one' });
    await writeV(1);
    assert.deepEqual(await deploy(2, 'keep'), { kept: 1, canceled: 0, migrated: 0 });
    assert.equal((await onlyRun(automation.id)).version, 1);
    await writeV(2);
    assert.deepEqual(await deploy(3, 'migrate'), { kept: 0, canceled: 0, migrated: 1 });
    assert.equal((await onlyRun(automation.id)).version, 3);
    await writeV(3);
    assert.deepEqual(await deploy(4, 'cancel'), { kept: 0, canceled: 1, migrated: 0 });
    const run = await onlyRun(automation.id);
    assert.equal(run.status, 'canceled');
    assert.equal((await conversation(run.conversation_id)).control, 'api');
  });

  it('a run still going at its time-out ends timed_out', async () => {
    const connection = await number();
    const automation = await automationOn(connection.id, replyFlow(undefined, { timeout_seconds: 600 }));
    await inbound(server, connection, { text: 'hello' });
    advance(600);
    await settle(server);
    const run = await onlyRun(automation.id);
    assert.equal(run.status, 'timed_out');
    assert.equal(run.error.code, 'timed_out');
  });

  it('ten failed runs in a row disable the automation', async () => {
    const connection = await number();
    // A free-form message to a customer who never wrote: the window is closed, the step fails.
    const automation = await automationOn(connection.id, {
      trigger: { type: 'api' },
      start: 'say',
      steps: [{ id: 'say', type: 'send_message', text: 'hello' }],
    });
    for (let index = 0; index < 10; index++) {
      const started = await server.request('POST', '/v1/runs', {
        token: key,
        headers: { 'idempotency-key': `fail-${automation.id}-${index}` },
        body: { automation_id: automation.id, to: `+${newCustomer()}` },
      });
      assert.equal(started.status, 201, started.text);
      await settle(server);
    }
    const runs = await runsOf(automation.id);
    assert.equal(runs.length, 10);
    assert.ok(runs.every((run) => run.status === 'failed' && run.error.code === 'window_closed'));
    const after = (await server.request('GET', `/v1/automations/${automation.id}`, { token: key })).body;
    assert.equal(after.status, 'disabled');
    assert.equal(after.disabled_reason, 'consecutive_failures');
    const refused = await server.request('POST', '/v1/runs', {
      token: key,
      headers: { 'idempotency-key': `fail-${automation.id}-after` },
      body: { automation_id: automation.id, to: `+${newCustomer()}` },
    });
    assertError(refused, 409, 'invalid_state');
  });

  describe('triggers', () => {
    it('conversation_created greets a new thread; the first message is kept for a later wait', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, {
        trigger: { type: 'conversation_created' },
        start: 'hello',
        steps: [
          { id: 'hello', type: 'send_template', template: 'hello_world', language: 'en_US', next: 'listen' },
          { id: 'listen', type: 'wait_for_reply', timeout_seconds: 60, save_as: 'first' },
        ],
      });
      const first = await inbound(server, connection, { text: 'first words' });
      const run = await onlyRun(automation.id);
      assert.equal(run.trigger.type, 'conversation_created');
      assert.equal(run.status, 'completed');
      assert.equal(run.variables.first.id, first.id, 'the message that opened the thread reached the wait');
      assert.equal((await outbound(first.conversation_id))[0]!.type, 'template');
    });

    it('an event trigger with a filter: a survey when a conversation is closed', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, {
        trigger: { type: 'event', event: 'conversation.updated', filter: 'trigger.event.object.state == "closed"' },
        start: 'survey',
        steps: [{ id: 'survey', type: 'send_message', text: 'How did we do?' }],
      });
      const first = await inbound(server, connection, { text: 'hello' });
      await server.request('POST', `/v1/conversations/${first.conversation_id}/tags`, { token: key, body: { tags: ['vip'] } });
      assert.equal((await runsOf(automation.id)).length, 0, 'another change does not match the filter');
      const closed = await server.request('PATCH', `/v1/conversations/${first.conversation_id}`, { token: key, body: { state: 'closed' } });
      assert.equal(closed.status, 200, closed.text);
      await settle(server);
      const run = await onlyRun(automation.id);
      assert.equal(run.trigger.type, 'event');
      assert.equal(run.trigger.event_type, 'conversation.updated');
      assert.equal(run.status, 'completed');
      assert.deepEqual(
        (await outbound(first.conversation_id)).map((message) => message.text.body),
        ['How did we do?'],
      );
    });

    it('a schedule whose target is an automation starts a run at each occurrence', async () => {
      const connection = await number();
      const first = await inbound(server, connection, { text: 'hello' });
      const automation = await automationOn(connection.id, {
        trigger: { type: 'schedule' },
        input_schema: { type: 'object', properties: { reminder: { type: 'string' } }, required: ['reminder'] },
        start: 'remind',
        steps: [{ id: 'remind', type: 'send_message', text: 'Reminder: {{ input.reminder }}' }],
      });
      const target = { type: 'automation', automation_id: automation.id, input: { reminder: 'your table at 8' }, conversation_id: first.conversation_id };
      const bad = await server.request('POST', '/v1/schedules', {
        token: key,
        body: { recurrence: { type: 'once', at: new Date(server.clock.now().getTime() + 60_000).toISOString() }, target: { ...target, input: {} } },
      });
      assert.equal(assertError(bad, 400, 'validation_failed').param, '/target/input');
      const schedule = await server.request('POST', '/v1/schedules', {
        token: key,
        body: { recurrence: { type: 'once', at: new Date(server.clock.now().getTime() + 60_000).toISOString() }, target },
      });
      assert.equal(schedule.status, 201, schedule.text);
      advance(60);
      await settle(server);
      const run = await onlyRun(automation.id);
      assert.equal(run.trigger.type, 'schedule');
      assert.equal(run.status, 'completed');
      const occurrences = await server.request('GET', `/v1/schedules/${schedule.body.id}/occurrences`, { token: key });
      assert.equal(occurrences.body.data[0].result.run_id, run.id);
      assert.equal(run.trigger.occurrence_id, occurrences.body.data[0].id);
      assert.deepEqual(
        (await outbound(first.conversation_id)).map((message) => message.text.body),
        ['Reminder: your table at 8'],
      );
    });

    it('runs started by runs: never the same automation again, and chains stop at depth 3', async () => {
      const connection = await number();
      const starter = await automationOn(connection.id, { trigger: { type: 'message_received' }, start: 'done', steps: [done] }, 'Starter');
      // Each of these starts when any run finishes: each other's runs, and the starter's.
      const followers: Json[] = [];
      for (const name of ['One', 'Two']) {
        followers.push(await automationOn(connection.id, { trigger: { type: 'event', event: 'automation.run_finished' }, start: 'done', steps: [done] }, name));
      }
      await inbound(server, connection, { text: 'hello' });
      await settle(server);
      assert.equal((await runsOf(starter.id)).length, 1);
      // starter (depth 0) → One (1) → Two (2) → One (3); One's second run ends the chain.
      const one = await runsOf(followers[0]!.id);
      const two = await runsOf(followers[1]!.id);
      assert.equal(one.length, 2, JSON.stringify(one));
      assert.equal(two.length, 1, JSON.stringify(two));
      assert.ok([...one, ...two].every((run) => run.status === 'completed'));
    });
  });

  describe('housekeeping', () => {
    it('a contact merge folds conversations with their runs: one active run survives', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, replyFlow());
      const kept = await inbound(server, connection, { text: 'from the phone' });
      const folded = await inbound(server, connection, { text: 'from the tablet' });
      const merged = await server.request('POST', `/v1/contacts/${kept.contact_id}/merge`, { token: key, body: { source_contact_id: folded.contact_id } });
      assert.equal(merged.status, 200, merged.text);
      const runs = await runsOf(automation.id);
      assert.equal(runs.length, 2);
      assert.ok(runs.every((run) => run.conversation_id === kept.conversation_id));
      assert.deepEqual(runs.map((run) => run.status).sort(), ['canceled', 'waiting']);
      assert.equal(runs.find((run) => run.status === 'canceled')!.outcome, 'conversation_merged');
    });

    it("a contact merge that moves a run's conversation to the survivor: the run writes to the survivor", async () => {
      const connection = await number();
      const elsewhere = await number();
      const automation = await automationOn(connection.id, replyFlow());
      const moved = await inbound(server, connection, { text: 'from the old number' });
      const survivorNumber = newCustomer();
      const survivor = await inbound(server, elsewhere, { from: survivorNumber, text: 'hello' });
      const merged = await server.request('POST', `/v1/contacts/${survivor.contact_id}/merge`, { token: key, body: { source_contact_id: moved.contact_id } });
      assert.equal(merged.status, 200, merged.text);
      // The survivor answers on the number the run waits on: the moved thread, now theirs.
      await inbound(server, connection, { from: survivorNumber, text: 'it is me' });
      const run = await onlyRun(automation.id);
      assert.equal(run.status, 'completed', JSON.stringify(await eventsOf(run.id)));
      const sent = await outbound(moved.conversation_id);
      assert.equal(sent.at(-1)!.text.body, 'Thanks: it is me');
      assert.equal(sent.at(-1)!.contact_id, survivor.contact_id);
    });

    it('event-log entries go after 30 days', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, replyFlow());
      await inbound(server, connection, { text: 'hello' });
      const run = await onlyRun(automation.id);
      const before = (await eventsOf(run.id)).length;
      assert.ok(before > 0);
      advance(30 * 24 * 3600 - 1);
      await server.app.services.runs.purgeEvents();
      assert.equal((await eventsOf(run.id)).length, before, 'kept for 30 days');
      advance(2);
      await server.app.services.runs.purgeEvents();
      assert.deepEqual(await eventsOf(run.id), []);
    });
  });

  describe('POST /v1/runs', () => {
    it('checks the input against input_schema and names the field', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, {
        trigger: { type: 'api' },
        input_schema: { type: 'object', properties: { order: { type: 'string' } }, required: ['order'] },
        start: 'hello',
        steps: [{ id: 'hello', type: 'send_template', template: 'hello_world', language: 'en_US' }],
      });
      const send = (body: Json, idempotencyKey: string) =>
        server.request('POST', '/v1/runs', { token: key, headers: { 'idempotency-key': idempotencyKey }, body });
      const missing = await send({ automation_id: automation.id, to: `+${newCustomer()}`, input: {} }, `in-1-${automation.id}`);
      const error = assertError(missing, 400, 'validation_failed');
      assert.equal(error.param, '/input');
      const wrong = await send({ automation_id: automation.id, to: `+${newCustomer()}`, input: { order: 42 } }, `in-2-${automation.id}`);
      assert.equal(assertError(wrong, 400, 'validation_failed').param, '/input/order');
      const good = await send({ automation_id: automation.id, to: `+${newCustomer()}`, input: { order: 'A-1' } }, `in-3-${automation.id}`);
      assert.equal(good.status, 201, good.text);
      await settle(server);
      assert.equal((await server.request('GET', `/v1/runs/${good.body.id}`, { token: key })).body.status, 'completed');
    });

    it('requires an Idempotency-Key, and a replayed key starts no second run', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, askFlow());
      const body = { automation_id: automation.id, to: `+${newCustomer()}` };
      assertError(await server.request('POST', '/v1/runs', { token: key, body }), 400, 'idempotency_key_required');
      const first = await server.request('POST', '/v1/runs', { token: key, headers: { 'idempotency-key': `k-${automation.id}` }, body });
      const again = await server.request('POST', '/v1/runs', { token: key, headers: { 'idempotency-key': `k-${automation.id}` }, body });
      assert.equal(first.status, 201, first.text);
      assert.equal(again.body.id, first.body.id);
      assert.equal((await runsOf(automation.id)).length, 1);
    });

    it('refuses bad targets with the field at fault', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, askFlow());
      let n = 0;
      const send = (body: Json) => server.request('POST', '/v1/runs', { token: key, headers: { 'idempotency-key': `bad-${automation.id}-${n++}` }, body });
      assert.equal(
        assertError(await send({ automation_id: automation.id, to: '+4477001', contact_id: 'ct_01J00000000000000000000000' }), 400, 'validation_failed').param,
        '/to',
      );
      assert.equal(assertError(await send({ automation_id: 'aut_01J00000000000000000000000' }), 404, 'resource_not_found').param, '/automation_id');
      assert.equal(
        assertError(await send({ automation_id: automation.id, conversation_id: 'cnv_01J00000000000000000000000' }), 404, 'resource_not_found').param,
        '/conversation_id',
      );
      assert.equal(
        assertError(await send({ automation_id: automation.id, to: `+${newCustomer()}`, simulate: { replies: [] } }), 400, 'validation_failed').param,
        '/simulate',
      );
      assertError(await send({ automation_id: automation.id, to: 'not-a-number' }), 400, 'validation_failed');
      assertError(await send({ automation_id: automation.id, surprise: true }), 400, 'validation_failed');
    });

    it('refuses a version or seq past what the store holds (a 32-bit integer on PostgreSQL), in the body and in the query', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, replyFlow());
      const tooLarge = 2 ** 31;
      const started = await server.request('POST', '/v1/runs', {
        token: key,
        headers: { 'idempotency-key': `big-version-${automation.id}` },
        body: { automation_id: automation.id, to: `+${newCustomer()}`, version: tooLarge },
      });
      assert.equal(assertError(started, 400, 'validation_failed').param, '/version');
      // Past 2^53 too, where a JavaScript number can no longer tell the integers apart.
      for (const version of [String(tooLarge), '9007199254740993']) {
        const listed = await server.request('GET', `/v1/runs?automation_id=${automation.id}&version=${version}`, { token: key });
        assert.equal(assertError(listed, 400, 'validation_failed').param, '/query/version');
      }
      const events = await server.request('GET', `/v1/runs/run_01J00000000000000000000000/events?after_seq=${tooLarge}`, { token: key });
      assert.equal(assertError(events, 400, 'validation_failed').param, '/query/after_seq');
      const largest = await server.request('GET', `/v1/runs?automation_id=${automation.id}&version=${tooLarge - 1}`, { token: key });
      assert.equal(largest.status, 200, largest.text);
      assert.deepEqual(largest.body.data, []);
    });

    it("another organization's automation and run are not found", async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, replyFlow());
      await inbound(server, connection, { text: 'hello' });
      const run = await onlyRun(automation.id);
      const stranger = await signUp(server);
      assertError(await server.request('GET', `/v1/runs/${run.id}`, { token: stranger.token }), 404, 'resource_not_found');
      assertError(await server.request('GET', `/v1/runs/${run.id}/events`, { token: stranger.token }), 404, 'resource_not_found');
      assertError(await server.request('POST', `/v1/runs/${run.id}/cancel`, { token: stranger.token }), 404, 'resource_not_found');
      const listed = await server.request('GET', `/v1/runs?automation_id=${automation.id}`, { token: stranger.token });
      assert.deepEqual(listed.body.data, []);
      const started = await server.request('POST', '/v1/runs', {
        token: stranger.token,
        headers: { 'idempotency-key': `stranger-${run.id}` },
        body: { automation_id: automation.id, to: `+${newCustomer()}` },
      });
      assert.equal(assertError(started, 404, 'resource_not_found').param, '/automation_id');
    });

    it('a run cannot start where an agent answers, nor beside another run', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, askFlow());
      const first = await inbound(server, connection, { text: 'hello' });
      const start = (idempotencyKey: string) =>
        server.request('POST', '/v1/runs', {
          token: key,
          headers: { 'idempotency-key': idempotencyKey },
          body: { automation_id: automation.id, conversation_id: first.conversation_id },
        });
      const one = await start(`busy-1-${first.id}`);
      assert.equal(one.status, 201, one.text);
      assert.equal(assertError(await start(`busy-2-${first.id}`), 409, 'invalid_state').param, '/conversation_id');
      await server.request('POST', `/v1/runs/${one.body.id}/cancel`, { token: key });
      await server.request('POST', `/v1/conversations/${first.conversation_id}/control`, { token: key, body: { control: 'agent' } });
      assertError(await start(`busy-3-${first.id}`), 409, 'invalid_state');
    });
  });

  describe('cancel and events', () => {
    it('cancels a waiting run once; a second cancel is a conflict', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, replyFlow());
      await inbound(server, connection, { text: 'hello' });
      const run = await onlyRun(automation.id);
      const canceled = await server.request('POST', `/v1/runs/${run.id}/cancel`, { token: key });
      assert.equal(canceled.status, 200, canceled.text);
      assert.equal(canceled.body.status, 'canceled');
      assertError(await server.request('POST', `/v1/runs/${run.id}/cancel`, { token: key }), 409, 'invalid_state');
      // The wait's wake-up finds the run ended and does nothing.
      advance(3600);
      await settle(server);
      assert.equal((await onlyRun(automation.id)).status, 'canceled');
    });

    it('pages the event log by seq', async () => {
      const connection = await number();
      const automation = await automationOn(connection.id, replyFlow());
      await inbound(server, connection, { text: 'hello' });
      const run = await onlyRun(automation.id);
      const all = await eventsOf(run.id);
      const page = await server.request('GET', `/v1/runs/${run.id}/events?limit=2`, { token: key });
      assert.deepEqual(
        page.body.data.map((event: Json) => event.seq),
        [1, 2],
      );
      assert.equal(page.body.has_more, true);
      const next = await server.request('GET', `/v1/runs/${run.id}/events?after_seq=2&limit=100`, { token: key });
      assert.equal(next.body.data.length, all.length - 2);
      assertError(await server.request('GET', `/v1/runs/${run.id}/events?after_seq=-1`, { token: key }), 400, 'validation_failed');
    });
  });

  describe('dry runs', () => {
    it('walk the flow on a virtual clock with simulated replies, sending nothing', async () => {
      const connection = await number();
      const first = await inbound(server, connection, { text: 'hello', name: 'Ana' });
      const created = await server.request('POST', '/v1/automations', {
        token: key,
        body: { name: 'Draft', connection_id: connection.id, definition: askFlow() },
      });
      assert.equal(created.status, 201, created.text);
      const dry = await server.request('POST', '/v1/runs', {
        token: key,
        headers: { 'idempotency-key': `dry-${first.id}` },
        body: {
          automation_id: created.body.id,
          version: 1,
          conversation_id: first.conversation_id,
          dry_run: true,
          simulate: { replies: [{ text: 'my answer', after_seconds: 120 }] },
        },
      });
      assert.equal(dry.status, 201, dry.text);
      assert.equal(dry.body.dry_run, true);
      assert.equal(dry.body.status, 'completed');
      assert.equal(dry.body.variables.answer.text.body, 'my answer');
      const sends = dry.body.events.filter((event: Json) => event.type === 'effect.message_queued');
      assert.deepEqual(
        sends.map((event: Json) => event.data.content.text.body),
        ['Hi Ana, how can we help?', 'Thanks: my answer'],
      );
      const replied = dry.body.events.find((event: Json) => event.type === 'wait.replied');
      assert.equal(Date.parse(replied.at) - Date.parse(dry.body.started_at), 120_000, 'the virtual clock moved by the reply’s delay');
      await settle(server);
      assert.equal((await outbound(first.conversation_id)).length, 0, 'nothing was sent');
      assert.equal((await conversation(first.conversation_id)).control, 'api');
    });

    it('a dry run without replies takes every time-out', async () => {
      const connection = await number();
      const first = await inbound(server, connection, { text: 'hello' });
      const created = await server.request('POST', '/v1/automations', {
        token: key,
        body: { name: 'Draft', connection_id: connection.id, definition: askFlow() },
      });
      const dry = await server.request('POST', '/v1/runs', {
        token: key,
        headers: { 'idempotency-key': `dry-timeout-${first.id}` },
        body: { automation_id: created.body.id, version: 1, conversation_id: first.conversation_id, dry_run: true },
      });
      assert.equal(dry.status, 201, dry.text);
      assert.equal(dry.body.outcome, 'no_answer');
    });
  });
});
