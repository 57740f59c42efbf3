/**
 * Approvals end to end, through a listening server and the sandbox: a run reaches a
 * `request_approval` step and waits; a person approves (the frozen action runs, as rendered when it
 * was requested), rejects or lets it expire (the manual clock), each onto its branch. Then who may
 * decide, repeated and opposite decisions, another organization, a cancel racing an approval, the
 * events, and dry runs with simulated decisions.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, createKey, inbound, newCustomer, settle, signUp, type SignedUp } from '../../../test/factories.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';
import { automationReader } from '../../../test/automations.ts';

type Json = Record<string, any>;

/** Asks before sending the offer; rejected → `declined`, nobody within the hour → `late`. */
const offerFlow = (approvers: Json = { roles: ['owner', 'admin'] }) => ({
  trigger: { type: 'api' },
  start: 'ask',
  steps: [
    {
      id: 'ask',
      type: 'request_approval',
      title: 'Send the offer to {{ contact.name }}?',
      summary: 'Run {{ run.id }}',
      action_step: 'offer',
      approvers,
      expires_in_seconds: 3600,
      branches: { rejected: 'declined', expired: 'late' },
    },
    { id: 'offer', type: 'send_message', text: 'Hello {{ contact.name }}, here is your offer.', next: 'done' },
    { id: 'declined', type: 'end', outcome: 'declined' },
    { id: 'late', type: 'end', outcome: 'late' },
    { id: 'done', type: 'end', outcome: 'sent' },
  ],
});

describe('approvals', () => {
  let server: TestServer;
  let owner: SignedUp;
  let receiver: Receiver;
  /** The organization key that creates automations and starts runs (so it may never decide them). */
  let key: string;
  /** Keys made while the owner's session is fresh: another organization key, and a test key. */
  let otherKey: { id: string; key: string };
  let testKey: string;
  const suite = suiteScope();
  const automations = automationReader(
    () => server,
    () => key,
  );
  const { number, eventsOf, outbound } = automations;

  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
    receiver = await startReceiver(suite);
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    otherKey = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
    testKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'test' })).key;
    const endpoint = await server.request('POST', '/v1/webhook-endpoints', {
      token: key,
      body: { url: receiver.url, events: ['approval.requested', 'approval.decided'] },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
  });

  /** An admin signed in now (a dashboard session lasts 15 minutes; the manual clock moves hours). */
  const admin = () => addMember(server, owner.organizationId, 'admin');

  const automationOn = (connectionId: string, definition: Json) => automations.automationOn(connectionId, definition, 'Offer');

  /**
   * A customer named Ana writes (the window opens), and a run of the offer flow starts for her
   * conversation through the API, by `token`: answers the run waiting on its approval, and that approval.
   */
  async function waitingRun(options: { approvers?: Json; token?: string } = {}) {
    const connection = await number();
    const automation = await automationOn(connection.id, offerFlow(options.approvers));
    const message = await inbound(server, connection, { from: newCustomer(), text: 'Any offers?' });
    const named = await server.request('PATCH', `/v1/contacts/${message.contact_id}`, { token: key, body: { name: 'Ana' } });
    assert.equal(named.status, 200, named.text);
    const started = await server.request('POST', '/v1/runs', {
      token: options.token ?? key,
      headers: { 'idempotency-key': `offer-${message.id}` },
      body: { automation_id: automation.id, conversation_id: message.conversation_id },
    });
    assert.equal(started.status, 201, started.text);
    await settle(server);
    const run = await readRun(started.body.id);
    assert.equal(run.status, 'waiting', JSON.stringify(await eventsOf(run.id)));
    const approval = await readApproval(run.waiting_for.approval_id);
    return { run, approval, automation, conversationId: message.conversation_id, contactId: message.contact_id };
  }

  async function readRun(id: string): Promise<Json> {
    const response = await server.request('GET', `/v1/runs/${id}`, { token: key });
    assert.equal(response.status, 200, response.text);
    return response.body;
  }

  async function readApproval(id: string): Promise<Json> {
    const response = await server.request('GET', `/v1/approvals/${id}`, { token: key });
    assert.equal(response.status, 200, response.text);
    return response.body;
  }

  const decide = (id: string, decision: 'approve' | 'reject', token: string, body?: Json) =>
    server.request('POST', `/v1/approvals/${id}/${decision}`, { token, ...(body ? { body } : {}) });

  describe('deciding', () => {
    it('a run waits on its approval, which shows the action rendered at the request', async () => {
      const { run, approval } = await waitingRun();
      assert.deepEqual(run.waiting_for, { type: 'approval', until: approval.expires_at, approval_id: approval.id });
      assert.equal(run.current_step_id, 'ask');
      assert.equal(approval.object, 'approval');
      assert.equal(approval.status, 'pending');
      assert.equal(approval.run_id, run.id);
      assert.equal(approval.step_id, 'ask');
      assert.equal(approval.title, 'Send the offer to Ana?');
      assert.equal(approval.summary, `Run ${run.id}`);
      assert.deepEqual(approval.action, {
        step_id: 'offer',
        type: 'send_message',
        content: { type: 'text', text: { body: 'Hello Ana, here is your offer.' } },
      });
      assert.deepEqual(approval.approvers, { roles: ['owner', 'admin'], member_ids: [], allow_api_keys: false });
      assert.equal(Date.parse(approval.expires_at) - Date.parse(approval.requested_at), 3600 * 1000);
      assert.equal(approval.decided_by, null);
      const listed = await server.request('GET', `/v1/approvals?run_id=${run.id}&status=pending`, { token: key });
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(
        listed.body.data.map((each: Json) => each.id),
        [approval.id],
      );
      const none = await server.request('GET', `/v1/approvals?run_id=${run.id}&status=approved`, { token: key });
      assert.equal(none.body.data.length, 0);
    });

    it('approving runs the frozen action, not a re-render, then goes on from the action step', async () => {
      const { run, approval, conversationId, contactId } = await waitingRun();
      assert.equal((await outbound(conversationId)).length, 0, 'nothing is sent before the decision');
      // The contact changes after the request: the approved text is the one the approver saw.
      const renamed = await server.request('PATCH', `/v1/contacts/${contactId}`, { token: key, body: { name: 'Bob' } });
      assert.equal(renamed.status, 200, renamed.text);
      const approver = await admin();
      const approved = await decide(approval.id, 'approve', approver.token, { comment: 'Fine by me' });
      assert.equal(approved.status, 200, approved.text);
      assert.equal(approved.body.status, 'approved');
      assert.deepEqual(approved.body.decided_by, { member_id: approver.memberId, key_id: null });
      assert.equal(approved.body.comment, 'Fine by me');
      assert.equal(approved.body.decided_at, server.clock.now().toISOString());
      await settle(server);
      const sent = await outbound(conversationId);
      assert.deepEqual(
        sent.map((message) => message.text.body),
        ['Hello Ana, here is your offer.'],
      );
      const ended = await readRun(run.id);
      assert.equal(ended.status, 'completed');
      assert.equal(ended.outcome, 'sent');
      const types = (await eventsOf(run.id)).map((event) => `${event.type}:${event.step_id}`);
      assert.deepEqual(types.slice(2), [
        'step.started:ask',
        'wait.approval:ask',
        'approval.approved:ask',
        'step.started:offer',
        'effect.message_queued:offer',
        'step.completed:offer',
        'step.started:done',
        'run.completed:done',
      ]);
    });

    it('rejecting takes the rejected branch; the same decision again answers 200 unchanged, the opposite one 409', async () => {
      const { run, approval, conversationId } = await waitingRun();
      const approver = await admin();
      const rejected = await decide(approval.id, 'reject', approver.token, { comment: 'Not now' });
      assert.equal(rejected.status, 200, rejected.text);
      assert.equal(rejected.body.status, 'rejected');
      await settle(server);
      const ended = await readRun(run.id);
      assert.equal(ended.status, 'completed');
      assert.equal(ended.outcome, 'declined');
      assert.equal((await outbound(conversationId)).length, 0);

      const again = await decide(approval.id, 'reject', (await admin()).token, { comment: 'Still no' });
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.body, rejected.body, 'unchanged: the first decision and its comment stand');
      const opposite = assertError(await decide(approval.id, 'approve', approver.token), 409, 'invalid_state');
      assert.match(opposite.message, new RegExp(`^Approval ${approval.id} was already rejected at .+; it can no longer be approved\\.$`));
    });

    it('an approval nobody decides expires at its deadline onto the expired branch; a decision after it is 409', async () => {
      const { run, approval } = await waitingRun();
      server.clock.advance(3599 * 1000);
      await settle(server);
      assert.equal((await readApproval(approval.id)).status, 'pending');
      server.clock.advance(1000);
      // Past the deadline, before the expiry job ran: too late already.
      const late = assertError(await decide(approval.id, 'approve', (await admin()).token), 409, 'invalid_state');
      assert.match(late.message, /expired at/);
      await settle(server);
      const expired = await readApproval(approval.id);
      assert.equal(expired.status, 'expired');
      assert.equal(expired.decided_by, null);
      assert.equal(expired.decided_at, server.clock.now().toISOString());
      const ended = await readRun(run.id);
      assert.equal(ended.status, 'completed');
      assert.equal(ended.outcome, 'late');
      assert.ok((await eventsOf(run.id)).some((event) => event.type === 'approval.expired'));
      assertError(await decide(approval.id, 'approve', (await admin()).token), 409, 'invalid_state');
      assertError(await decide(approval.id, 'reject', (await admin()).token), 409, 'invalid_state');
    });

    it('an approval step with no branch for the outcome ends the run completed', async () => {
      const connection = await number();
      const flow = offerFlow();
      const { branches: _branches, ...ask } = flow.steps[0] as Json;
      const definition = { ...flow, steps: [ask, flow.steps[1], flow.steps[4]] };
      const automation = await automationOn(connection.id, definition);
      const message = await inbound(server, connection, { text: 'hi' });
      const started = await server.request('POST', '/v1/runs', {
        token: key,
        headers: { 'idempotency-key': `nobranch-${message.id}` },
        body: { automation_id: automation.id, conversation_id: message.conversation_id },
      });
      await settle(server);
      const run = await readRun(started.body.id);
      assert.equal((await decide(run.waiting_for.approval_id, 'reject', (await admin()).token)).status, 200);
      await settle(server);
      const ended = await readRun(run.id);
      assert.equal(ended.status, 'completed');
      assert.equal(ended.outcome, 'completed');
    });
  });

  describe('who decides', () => {
    it("another organization's approval is not found", async () => {
      const { approval } = await waitingRun();
      const other = await signUp(server, { organizationName: 'Other' });
      assertError(await server.request('GET', `/v1/approvals/${approval.id}`, { token: other.token }), 404, 'resource_not_found');
      assertError(await decide(approval.id, 'approve', other.token), 404, 'resource_not_found');
      const otherKey = await createKey(server, other.token, { kind: 'organization', mode: 'live' });
      assertError(await decide(approval.id, 'reject', otherKey.key), 404, 'resource_not_found');
      assert.equal((await readApproval(approval.id)).status, 'pending');
    });

    it('a test key sees test approvals only', async () => {
      const { approval } = await waitingRun();
      assertError(await server.request('GET', `/v1/approvals/${approval.id}`, { token: testKey }), 404, 'resource_not_found');
      const listed = await server.request('GET', '/v1/approvals', { token: testKey });
      assert.equal(listed.status, 200, listed.text);
      assert.equal(listed.body.data.length, 0);
    });

    it('a viewer is refused by role, even when its role is listed', async () => {
      const { approval } = await waitingRun({ approvers: { roles: ['viewer', 'admin'] } });
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      const error = assertError(await decide(approval.id, 'approve', viewer.token), 403, 'role_insufficient');
      assert.deepEqual(error.allowed_roles, ['owner', 'admin']);
      assert.equal((await server.request('GET', `/v1/approvals/${approval.id}`, { token: viewer.token })).status, 200, 'a viewer may read it');
    });

    it('a member neither of a listed role nor listed by id is refused; one listed by id may decide', async () => {
      const listed = await admin();
      const { approval } = await waitingRun({ approvers: { member_ids: [listed.memberId] } });
      const error = assertError(await decide(approval.id, 'approve', (await admin()).token), 403, 'role_insufficient');
      assert.match(error.message, new RegExp(`its step lists members ${listed.memberId}`));
      const approved = await decide(approval.id, 'approve', listed.token);
      assert.equal(approved.status, 200, approved.text);
    });

    it('whoever triggered the run cannot decide it: neither the key, nor the member whose session did', async () => {
      const byKey = await waitingRun({ approvers: { roles: ['admin'], allow_api_keys: true } });
      const refused = assertError(await decide(byKey.approval.id, 'approve', key), 403, 'role_insufficient');
      assert.match(refused.message, /was started by this credential/);

      const starter = await admin();
      const bySession = await waitingRun({ approvers: { roles: ['admin'] }, token: starter.token });
      assert.match(assertError(await decide(bySession.approval.id, 'approve', starter.token), 403, 'role_insufficient').message, /was started by this member/);
      // The same member signed in again (another session) is still the one who started it.
      const again = await server.request('POST', '/auth/login', { body: { email: starter.email, password: starter.password } });
      assert.equal(again.status, 200, again.text);
      assertError(await decide(bySession.approval.id, 'reject', again.body.token), 403, 'role_insufficient');
      assert.equal((await decide(bySession.approval.id, 'approve', (await admin()).token)).status, 200);
    });

    it('an API key decides only when the step allows keys', async () => {
      const closed = await waitingRun();
      const error = assertError(await decide(closed.approval.id, 'approve', otherKey.key), 403, 'credential_kind_not_allowed');
      assert.deepEqual(error.allowed_credentials, ['dashboard_token']);

      const open = await waitingRun({ approvers: { roles: ['admin'], allow_api_keys: true } });
      const approved = await decide(open.approval.id, 'approve', otherKey.key);
      assert.equal(approved.status, 200, approved.text);
      assert.deepEqual(approved.body.decided_by, { member_id: null, key_id: otherKey.id });
      await settle(server);
      assert.equal((await readRun(open.run.id)).outcome, 'sent');
    });
  });

  describe('endings', () => {
    it('canceling the run cancels its approval; a later decision is 409', async () => {
      const { run, approval } = await waitingRun();
      const canceled = await server.request('POST', `/v1/runs/${run.id}/cancel`, { token: key });
      assert.equal(canceled.status, 200, canceled.text);
      const after = await readApproval(approval.id);
      assert.equal(after.status, 'canceled');
      assert.equal(after.decided_by, null);
      assertError(await decide(approval.id, 'approve', (await admin()).token), 409, 'invalid_state');
    });

    it('a deploy that cancels runs in flight cancels their approvals', async () => {
      const { approval, automation } = await waitingRun();
      const deployed = await server.request('POST', `/v1/automations/${automation.id}/deploy`, { token: key, body: { version: 1, in_flight: 'cancel' } });
      assert.equal(deployed.status, 200, deployed.text);
      assert.equal(deployed.body.in_flight.canceled, 1);
      assert.equal((await readApproval(approval.id)).status, 'canceled');
    });

    it('approving and canceling racing: exactly one wins, and the run agrees with the approval', async () => {
      for (let round = 0; round < 3; round++) {
        const { run, approval, conversationId } = await waitingRun();
        const approver = await admin();
        const [approved, canceled] = await Promise.all([
          decide(approval.id, 'approve', approver.token),
          server.request('POST', `/v1/runs/${run.id}/cancel`, { token: key }),
        ]);
        await settle(server);
        const final = await readApproval(approval.id);
        const types = (await eventsOf(run.id)).map((event) => event.type);
        assert.equal((await readRun(run.id)).status === 'canceled' || (await readRun(run.id)).status === 'completed', true);
        if (final.status === 'approved') {
          assert.equal(approved.status, 200, approved.text);
          assert.equal(types.filter((type) => type === 'approval.approved').length, 1);
        } else {
          assert.equal(final.status, 'canceled');
          assertError(approved, 409, 'invalid_state');
          assert.equal(canceled.status, 200, canceled.text);
          assert.equal(types.includes('approval.approved'), false);
          assert.equal((await outbound(conversationId)).length, 0, 'a canceled approval sends nothing');
        }
        const decided = receiver.received
          .map((request) => JSON.parse(request.body) as Json)
          .filter((event) => event.type === 'approval.decided' && event.data.object.id === approval.id);
        assert.equal(decided.length, 1, 'one ending, one event');
        assert.equal(decided[0]!.data.object.status, final.status);
      }
    });

    it('emits approval.requested when asked and approval.decided on every ending, with the run’s connection', async () => {
      const approvedOne = await waitingRun();
      assert.equal((await decide(approvedOne.approval.id, 'approve', (await admin()).token)).status, 200);
      const canceledOne = await waitingRun();
      assert.equal((await server.request('POST', `/v1/runs/${canceledOne.run.id}/cancel`, { token: key })).status, 200);
      const expiredOne = await waitingRun();
      server.clock.advance(3600 * 1000);
      await settle(server);
      const events = receiver.received.map((request) => JSON.parse(request.body) as Json);
      for (const [{ approval, run }, ending] of [
        [approvedOne, 'approved'],
        [canceledOne, 'canceled'],
        [expiredOne, 'expired'],
      ] as const) {
        const mine = events.filter((event) => event.data.object.id === approval.id);
        assert.deepEqual(
          mine.map((event) => `${event.type}:${event.data.object.status}`),
          ['approval.requested:pending', `approval.decided:${ending}`],
        );
        assert.equal(mine[0]!.connection_id, run.connection_id);
        assert.equal(mine[1]!.data.object.run_id, run.id);
      }
    });
  });

  describe('dry runs', () => {
    async function dryRun(automationId: string, contactId: string, simulate: Json): Promise<Json> {
      const response = await server.request('POST', '/v1/runs', {
        token: key,
        headers: { 'idempotency-key': `dry-${Math.random()}` },
        body: { automation_id: automationId, contact_id: contactId, dry_run: true, simulate },
      });
      assert.equal(response.status, 201, response.text);
      return response.body;
    }

    it('simulated decisions, in order, one per approval step; none left expires at the deadline', async () => {
      const { automation, contactId, run } = await waitingRun();
      assert.equal((await server.request('POST', `/v1/runs/${run.id}/cancel`, { token: key })).status, 200);

      const approved = await dryRun(automation.id, contactId, { approvals: [{ decision: 'approved', after_seconds: 120 }] });
      assert.equal(approved.outcome, 'sent');
      const requested = approved.events.find((event: Json) => event.type === 'approval.requested');
      assert.deepEqual(requested.data.action.content, { type: 'text', text: { body: 'Hello Ana, here is your offer.' } });
      const decided = approved.events.find((event: Json) => event.type === 'approval.approved');
      assert.equal(Date.parse(decided.at) - Date.parse(requested.at), 120 * 1000);
      const sent = approved.events.find((event: Json) => event.type === 'effect.message_queued');
      assert.deepEqual(sent.data, { simulated: true, content: { type: 'text', text: { body: 'Hello Ana, here is your offer.' } } });

      assert.equal((await dryRun(automation.id, contactId, { approvals: [{ decision: 'rejected' }] })).outcome, 'declined');
      const none = await dryRun(automation.id, contactId, {});
      assert.equal(none.outcome, 'late');
      const expired = none.events.find((event: Json) => event.type === 'approval.expired');
      assert.equal(Date.parse(expired.at) - Date.parse(none.created_at), 3600 * 1000);
      assert.equal((await dryRun(automation.id, contactId, { approvals: [{ decision: 'approved', after_seconds: 3600 }] })).outcome, 'late');
      assert.equal((await server.request('GET', `/v1/approvals?automation_id=${automation.id}`, { token: key })).body.data.length, 1, 'a dry run files none');
    });

    it('simulate.approvals is for dry runs only, and its decisions are checked', async () => {
      const { automation, conversationId, run } = await waitingRun();
      await server.request('POST', `/v1/runs/${run.id}/cancel`, { token: key });
      const live = await server.request('POST', '/v1/runs', {
        token: key,
        headers: { 'idempotency-key': `sim-${run.id}` },
        body: { automation_id: automation.id, conversation_id: conversationId, simulate: { approvals: [{ decision: 'approved' }] } },
      });
      assert.equal(assertError(live, 400, 'validation_failed').param, '/simulate');
      const bad = await server.request('POST', '/v1/runs', {
        token: key,
        headers: { 'idempotency-key': `sim-bad-${run.id}` },
        body: { automation_id: automation.id, dry_run: true, simulate: { approvals: [{ decision: 'maybe' }] } },
      });
      assert.equal(assertError(bad, 400, 'validation_failed').param, '/simulate/approvals/0/decision');
    });
  });
});
