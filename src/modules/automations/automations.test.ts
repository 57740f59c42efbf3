/**
 * /v1/automations over HTTP: creating, reading, changing and deleting automations, writing versions
 * (optimistic concurrency, the definition's checks surfaced with their pointers, warnings), deploying
 * and rolling back (what refuses a deploy), enabling (the limit) and disabling, who may see what; and
 * the count of failed runs that disables an automation by itself, through the service the runs module
 * calls.
 *
 * Deploy, rollback, disable and delete settle runs in flight through the runs module, which attaches
 * itself to the automations service when the app is built.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { newId } from '../../lib/ids.ts';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import {
  addMember,
  assertError,
  createConnection,
  createKey,
  defineTemplate,
  signUp,
  startServerWithTwoOrganizations,
  type SignedUp,
} from '../../../test/factories.ts';
import { MAX_ENABLED_AUTOMATIONS } from './automations.service.ts';

type Json = Record<string, any>;

const greet = (extra: Json = {}) => ({ id: 'greet', type: 'send_template', template: 'hello_world', language: 'en_US', next: 'done', ...extra });
const done = { id: 'done', type: 'end' };
/** A sound definition: greet with the approved `hello_world`, then end. */
const definitionWith = (steps: Json[] = [greet(), done], extra: Json = {}) => ({ trigger: { type: 'message_received' }, start: steps[0]!.id, steps, ...extra });
/** A definition as stored: with the defaults of what it left out. */
const stored = (definition: Json) => ({ claim_control: 'if_api', timeout_seconds: 604800, ...definition });

async function auditActions(server: TestServer, token: string, targetId: string): Promise<string[]> {
  const response = await server.request('GET', `/v1/events?target_id=${targetId}&order=asc`, { token });
  assert.equal(response.status, 200, response.text);
  return response.body.data.map((event: { action: string }) => event.action);
}

describe('automations', () => {
  let server: TestServer;
  let owner: SignedUp;
  let other: SignedUp;
  let line: { id: string; phone_number_id: string };
  let testLine: { id: string; phone_number_id: string };
  const suite = suiteScope();
  before(async () => {
    ({ server, alpha: owner, beta: other } = await startServerWithTwoOrganizations(suite));
    // A sandbox number's account has `hello_world` approved once synced.
    line = await createConnection(server, owner);
    testLine = await createConnection(server, owner, { test: true });
    for (const connection of [line, testLine]) {
      const sync = await server.request('POST', `/v1/connections/${connection.id}/sync`, { token: owner.token });
      assert.equal(sync.status, 200, sync.text);
    }
    await defineTemplate(server, owner.token, line, { name: 'order_update', category: 'utility', text: 'Order {{1}}', examples: ['42'], approve: false });
  });

  const create = (body: Json, token = owner.token) => server.request('POST', '/v1/automations', { token, body });
  async function created(body: Json = {}, token = owner.token): Promise<Json> {
    const response = await create({ name: 'Welcome', ...body }, token);
    assert.equal(response.status, 201, response.text);
    return response.body;
  }
  const get = (id: string, token = owner.token) => server.request('GET', `/v1/automations/${id}`, { token });
  const post = (id: string, action: string, body?: Json, token = owner.token) =>
    server.request('POST', `/v1/automations/${id}/${action}`, { token, ...(body === undefined ? {} : { body }) });
  const writeVersion = (id: string, definition: Json, basedOn: number, extra: Json = {}) =>
    post(id, 'versions', { definition, based_on_version: basedOn, ...extra });
  async function deployed(body: Json = {}): Promise<Json> {
    const automation = await created({ definition: definitionWith(), ...body });
    const deployment = await post(automation.id, 'deploy', { version: 1 });
    assert.equal(deployment.status, 200, deployment.text);
    return deployment.body.automation;
  }

  describe('create, read, list, update', () => {
    it('an automation without a definition is a draft with no version, audited', async () => {
      const automation = await created({ description: 'Greets new customers', metadata: { team: 'support' } });
      assert.match(automation.id, /^aut_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.deepEqual(
        { ...automation, id: undefined },
        {
          id: undefined,
          object: 'automation',
          name: 'Welcome',
          description: 'Greets new customers',
          mode: 'live',
          connection_id: null,
          status: 'draft',
          disabled_reason: null,
          trigger: null,
          deployed_version: null,
          previous_deployed_version: null,
          latest_version: 0,
          consecutive_failures: 0,
          metadata: { team: 'support' },
          created_at: '2026-06-01T12:00:00.000Z',
          updated_at: '2026-06-01T12:00:00.000Z',
        },
      );
      assert.deepEqual((await get(automation.id)).body, automation);
      assert.deepEqual(await auditActions(server, owner.token, automation.id), ['automation.created']);
    });

    it('a definition given at creation is version 1, written by the member, with no warnings when it can be deployed', async () => {
      const automation = await created({ definition: definitionWith(), message: 'First draft', connection_id: line.id });
      assert.equal(automation.latest_version, 1);
      assert.equal(automation.connection_id, line.id);
      const version = await server.request('GET', `/v1/automations/${automation.id}/versions/1`, { token: owner.token });
      assert.equal(version.status, 200, version.text);
      assert.match(version.body.id, /^autv_/);
      assert.deepEqual(
        { ...version.body, id: undefined },
        {
          id: undefined,
          object: 'automation_version',
          automation_id: automation.id,
          number: 1,
          definition: stored(definitionWith()),
          message: 'First draft',
          created_by: owner.memberId,
          warnings: [],
          created_at: '2026-06-01T12:00:00.000Z',
        },
      );
    });

    it('a template not approved is stored, with a warning naming its pointer', async () => {
      const definition = definitionWith([
        greet({ template: 'order_update', next: 'call' }),
        { id: 'call', type: 'http_request', connector_account_id: newId('connectorAccount'), method: 'GET', path: '/orders' },
      ]);
      const automation = await created({ definition, connection_id: line.id });
      const version = await server.request('GET', `/v1/automations/${automation.id}/versions/1`, { token: owner.token });
      assert.equal(version.status, 200, version.text);
      assert.equal(version.body.warnings.length, 1, version.text);
      assert.match(version.body.warnings[0], /^\/definition\/steps\/0\/template: template order_update \(en_US\) is not approved/);
    });

    it('a test key creates test automations; a dashboard token may ask for test mode; a connection fixes the mode', async () => {
      const testKey = await createKey(server, owner.token, { kind: 'organization', mode: 'test' });
      assert.equal((await created({}, testKey.key)).mode, 'test');
      assert.equal((await created({ mode: 'test' })).mode, 'test');
      assert.equal((await created({ connection_id: testLine.id })).mode, 'test');
      const error = assertError(await create({ name: 'x', mode: 'live' }, testKey.key), 400, 'validation_failed');
      assert.equal(error.param, '/mode');
      assertError(await create({ name: 'x', connection_id: line.id, mode: 'test' }), 400, 'validation_failed');
    });

    it('bad bodies are refused with the offending field', async () => {
      const cases: [Json, string, number, string][] = [
        [{ name: 'x', colour: 'red' }, '/colour', 400, 'validation_failed'],
        [{}, '/name', 400, 'validation_failed'],
        [{ name: '' }, '/name', 400, 'validation_failed'],
        [{ name: 'x', connection_id: 'con_nope' }, '/connection_id', 400, 'validation_failed'],
        [{ name: 'x', connection_id: newId('connection') }, '/connection_id', 404, 'resource_not_found'],
        [{ name: 'x', mode: 'staging' }, '/mode', 400, 'validation_failed'],
        [{ name: 'x', message: 'no definition' }, '/message', 400, 'validation_failed'],
        [{ name: 'x', definition: definitionWith([{ id: 'greet', type: 'teleport' }]) }, '/definition/steps/0/type', 400, 'validation_failed'],
        [{ name: 'x', definition: { ...definitionWith([{ id: 'Greet!', type: 'end' }]), start: 'greet' } }, '/definition/steps/0/id', 400, 'validation_failed'],
        [{ name: 'x', definition: { ...definitionWith(), colour: 1 } }, '/definition/colour', 400, 'validation_failed'],
      ];
      for (const [body, param, status, code] of cases) {
        const error = assertError(await create(body), status, code);
        assert.equal(error.param, param, JSON.stringify(body));
      }
    });

    it('a definition over 256 KB is refused as too large', async () => {
      const steps = Array.from({ length: 100 }, (_, index) => ({
        id: `s${index}`,
        type: 'send_message',
        text: 'x'.repeat(4000),
        ...(index < 99 ? { next: `s${index + 1}` } : {}),
      }));
      const error = assertError(await create({ name: 'Big', definition: definitionWith(steps) }), 400, 'validation_failed');
      assert.equal(error.param, '/definition');
      assert.equal(error.details[0].code, 'too_large');
    });

    it('lists filter by status and connection, page by cursor, newest first', async () => {
      const first = await created({ connection_id: line.id, name: 'One' });
      const second = await created({ connection_id: line.id, name: 'Two' });
      const byConnection = await server.request('GET', `/v1/automations?connection_id=${line.id}&limit=1`, { token: owner.token });
      assert.equal(byConnection.status, 200, byConnection.text);
      assert.deepEqual(
        byConnection.body.data.map((each: Json) => each.id),
        [second.id],
      );
      assert.equal(byConnection.body.has_more, true);
      const next = await server.request('GET', `/v1/automations?connection_id=${line.id}&limit=100&after=${byConnection.body.next_cursor}`, {
        token: owner.token,
      });
      assert.ok(next.body.data.some((each: Json) => each.id === first.id));
      assert.ok(next.body.data.every((each: Json) => each.connection_id === line.id));
      const drafts = await server.request('GET', '/v1/automations?status=enabled', { token: owner.token });
      assert.ok(drafts.body.data.every((each: Json) => each.status === 'enabled'));
      assertError(await server.request('GET', '/v1/automations?status=paused', { token: owner.token }), 400, 'validation_failed');
    });

    it('PATCH changes the name and description and merges metadata; unknown fields are refused', async () => {
      const automation = await created({ metadata: { a: '1', b: '2' } });
      const response = await server.request('PATCH', `/v1/automations/${automation.id}`, {
        token: owner.token,
        body: { name: 'Renamed', description: null, metadata: { b: null, c: '3' } },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.name, 'Renamed');
      assert.equal(response.body.description, null);
      assert.deepEqual(response.body.metadata, { a: '1', c: '3' });
      assert.deepEqual(await auditActions(server, owner.token, automation.id), ['automation.created', 'automation.updated']);
      const error = assertError(
        await server.request('PATCH', `/v1/automations/${automation.id}`, { token: owner.token, body: { status: 'enabled' } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/status');
    });

    it('bad ids are validation failures; unknown ids and another organization’s are not found', async () => {
      const mine = await created();
      assertError(await get('aut_nope'), 400, 'validation_failed');
      assertError(await get(newId('automation')), 404, 'resource_not_found');
      assertError(await get(mine.id, other.token), 404, 'resource_not_found');
      assertError(await server.request('PATCH', `/v1/automations/${mine.id}`, { token: other.token, body: { name: 'x' } }), 404, 'resource_not_found');
      assertError(await post(mine.id, 'versions', { definition: definitionWith(), based_on_version: 0 }, other.token), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/automations/${mine.id}`, { token: other.token }), 404, 'resource_not_found');
    });

    it('a test key sees test automations only; a live key and the dashboard see both', async () => {
      const live = await created({ name: 'Live one' });
      const test = await created({ name: 'Test one', mode: 'test' });
      const testKey = await createKey(server, owner.token, { kind: 'organization', mode: 'test' });
      assertError(await get(live.id, testKey.key), 404, 'resource_not_found');
      assert.equal((await get(test.id, testKey.key)).status, 200);
      const listed = await server.request('GET', '/v1/automations?limit=100', { token: testKey.key });
      assert.ok(listed.body.data.every((each: Json) => each.mode === 'test'));
      assert.ok(listed.body.data.some((each: Json) => each.id === test.id));
      const liveKey = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      assert.equal((await get(test.id, liveKey.key)).status, 200);
    });

    it('a viewer reads but cannot write', async () => {
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      const automation = await created();
      assert.equal((await get(automation.id, viewer.token)).status, 200);
      assertError(await create({ name: 'x' }, viewer.token), 403, 'scope_missing');
    });
  });

  describe('versions', () => {
    it('each version is based on the latest; a stale based_on_version is a conflict naming the latest', async () => {
      const automation = await created();
      const first = await writeVersion(automation.id, definitionWith(), 0, { message: 'v1' });
      assert.equal(first.status, 201, first.text);
      assert.equal(first.body.number, 1);
      const second = await writeVersion(automation.id, definitionWith([done]), 1);
      assert.equal(second.status, 201, second.text);
      assert.equal(second.body.number, 2);
      const stale = assertError(await writeVersion(automation.id, definitionWith(), 1), 409, 'invalid_state');
      assert.equal(stale.param, '/based_on_version');
      assert.match(stale.message, /version 2/);
      assert.equal(stale.latest_version, 2);
      assertError(await writeVersion(automation.id, definitionWith(), 5), 409, 'invalid_state');
      assert.equal((await get(automation.id)).body.latest_version, 2);
      assert.deepEqual(await auditActions(server, owner.token, automation.id), [
        'automation.created',
        'automation.version_created',
        'automation.version_created',
      ]);
    });

    it('versions list newest first and page; an unknown number is not found', async () => {
      const automation = await created({ definition: definitionWith() });
      for (const basedOn of [1, 2]) assert.equal((await writeVersion(automation.id, definitionWith(), basedOn)).status, 201);
      const page = await server.request('GET', `/v1/automations/${automation.id}/versions?limit=2`, { token: owner.token });
      assert.equal(page.status, 200, page.text);
      assert.deepEqual(
        page.body.data.map((version: Json) => version.number),
        [3, 2],
      );
      assert.equal(page.body.has_more, true);
      const rest = await server.request('GET', `/v1/automations/${automation.id}/versions?after=${page.body.next_cursor}`, { token: owner.token });
      assert.deepEqual(
        rest.body.data.map((version: Json) => version.number),
        [1],
      );
      assertError(await server.request('GET', `/v1/automations/${automation.id}/versions/4`, { token: owner.token }), 404, 'resource_not_found');
      assertError(await server.request('GET', `/v1/automations/${automation.id}/versions/0`, { token: owner.token }), 400, 'validation_failed');
      assertError(await server.request('GET', `/v1/automations/${automation.id}/versions`, { token: other.token }), 404, 'resource_not_found');
    });

    it('bad version bodies: unknown fields, no based_on_version or one too large, another organization’s automation', async () => {
      const automation = await created();
      assert.equal(assertError(await writeVersion(automation.id, definitionWith(), 0, { draft: true }), 400, 'validation_failed').param, '/draft');
      const missing = await post(automation.id, 'versions', { definition: definitionWith() });
      assert.equal(assertError(missing, 400, 'validation_failed').param, '/based_on_version');
      // Past the store's integer column (32 bits on PostgreSQL): refused, never a failed query.
      assert.equal(assertError(await writeVersion(automation.id, definitionWith(), 2 ** 31), 400, 'validation_failed').param, '/based_on_version');
      assertError(await post(automation.id, 'versions', { definition: definitionWith(), based_on_version: 0 }, other.token), 404, 'resource_not_found');
    });

    // The definition's rules beyond its schema (definition/check-definition.ts), each surfaced with its pointer.
    const problems: [string, Json, RegExp][] = [
      ['a duplicate step id', definitionWith([greet(), { ...done }, { ...done }]), /^\/definition\/steps\/2\/id$/],
      ['a next that is no step', definitionWith([greet({ next: 'nowhere' }), done]), /^\/definition\/steps\/0\/next$/],
      ['a start that is no step', { ...definitionWith(), start: 'nowhere' }, /^\/definition\/start$/],
      ['an unreachable step', definitionWith([greet(), done, { id: 'orphan', type: 'end' }]), /^\/definition\/steps\/2(\/id)?$/],
      [
        'a cycle with no waiting step',
        definitionWith([
          { id: 'a', type: 'set_variable', name: 'n', value: '1', next: 'b' },
          { id: 'b', type: 'set_variable', name: 'n', value: '2', next: 'a' },
        ]),
        /^\/definition\/steps\/[01](\/next)?$/,
      ],
      [
        'an expression that does not parse',
        definitionWith([greet(), done], { trigger: { type: 'message_received', filter: 'message.text ==' } }),
        /^\/definition\/trigger\/filter$/,
      ],
      ['an event trigger without its event', definitionWith([greet(), done], { trigger: { type: 'event' } }), /^\/definition\/trigger\/event$/],
    ];
    for (const [what, definition, pointer] of problems) {
      it(`${what} is refused with its pointer, on create and on a new version`, async () => {
        const onCreate = assertError(await create({ name: 'x', definition }), 400, 'validation_failed');
        assert.match(onCreate.param, pointer, JSON.stringify(onCreate));
        assert.ok(onCreate.details.some((detail: Json) => pointer.test(detail.param)));
        const automation = await created();
        const onVersion = assertError(await writeVersion(automation.id, definition, 0), 400, 'validation_failed');
        assert.match(onVersion.param, pointer);
        assert.equal((await get(automation.id)).body.latest_version, 0);
      });
    }
  });

  describe('deploy, rollback, enable, disable, delete', () => {
    it('deploying a version makes it the deployed one, copies its trigger, and answers the runs settled', async () => {
      const automation = await created({ definition: definitionWith(), connection_id: line.id });
      const response = await post(automation.id, 'deploy', { version: 1 });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.object, 'automation_deployment');
      assert.equal(response.body.version, 1);
      assert.deepEqual(response.body.in_flight, { kept: 0, canceled: 0, migrated: 0 });
      assert.equal(response.body.automation.deployed_version, 1);
      assert.equal(response.body.automation.previous_deployed_version, null);
      assert.deepEqual(response.body.automation.trigger, { type: 'message_received', event: null });
      assert.equal(response.body.automation.status, 'draft');
      assert.deepEqual((await get(automation.id)).body, response.body.automation);
      assert.deepEqual(await auditActions(server, owner.token, automation.id), ['automation.created', 'automation.deployed']);
    });

    it('rollback redeploys the previous version; with none it is refused', async () => {
      const automation = await created({ definition: definitionWith() });
      assertError(await post(automation.id, 'rollback'), 409, 'invalid_state');
      assert.equal((await post(automation.id, 'deploy', { version: 1 })).status, 200);
      assertError(await post(automation.id, 'rollback', {}), 409, 'invalid_state');
      const event = definitionWith([greet(), done], { trigger: { type: 'event', event: 'contact.created' } });
      assert.equal((await writeVersion(automation.id, event, 1)).status, 201);
      const second = await post(automation.id, 'deploy', { version: 2, in_flight: 'migrate' });
      assert.equal(second.status, 200, second.text);
      assert.deepEqual(second.body.automation.trigger, { type: 'event', event: 'contact.created' });
      const back = await post(automation.id, 'rollback', { in_flight: 'cancel' });
      assert.equal(back.status, 200, back.text);
      assert.equal(back.body.automation.deployed_version, 1);
      assert.equal(back.body.automation.previous_deployed_version, 2);
      assert.deepEqual(back.body.automation.trigger, { type: 'message_received', event: null });
    });

    it('a version with a template not approved is refused at deploy, pointing at the step', async () => {
      const automation = await created({ definition: definitionWith([greet({ template: 'order_update' }), done]), connection_id: line.id });
      const error = assertError(await post(automation.id, 'deploy', { version: 1 }), 409, 'template_not_approved');
      assert.equal(error.param, '/version');
      assert.equal(error.details[0].param, '/definition/steps/0/template');
      assert.equal((await get(automation.id)).body.deployed_version, null);
    });

    it('a version whose http_request step names no connector account of the organization is refused at deploy', async () => {
      const call = { id: 'call', type: 'http_request', connector_account_id: newId('connectorAccount'), method: 'GET', path: '/orders' };
      const automation = await created({ definition: definitionWith([call]) });
      const error = assertError(await post(automation.id, 'deploy', { version: 1 }), 404, 'resource_not_found');
      assert.equal(error.param, '/definition/steps/0/connector_account_id');
    });

    it('an unknown version, a bad policy and unknown fields are refused', async () => {
      const automation = await created({ definition: definitionWith() });
      assert.equal(assertError(await post(automation.id, 'deploy', { version: 2 }), 404, 'resource_not_found').param, '/version');
      assert.equal(assertError(await post(automation.id, 'deploy', { version: 1, in_flight: 'drop' }), 400, 'validation_failed').param, '/in_flight');
      assert.equal(assertError(await post(automation.id, 'deploy', { version: 1, force: true }), 400, 'validation_failed').param, '/force');
      assertError(await post(automation.id, 'deploy', { version: 1 }, other.token), 404, 'resource_not_found');
      assert.equal(assertError(await post(automation.id, 'disable', { in_flight: 'migrate' }), 400, 'validation_failed').param, '/in_flight');
    });

    it('enable needs a deployed version, resets the failures, and is audited; disable records the user as the reason', async () => {
      const draft = await created({ definition: definitionWith() });
      assertError(await post(draft.id, 'enable'), 409, 'invalid_state');
      const automation = await deployed();
      const enabled = await post(automation.id, 'enable');
      assert.equal(enabled.status, 200, enabled.text);
      assert.equal(enabled.body.status, 'enabled');
      // No body: the policy's default, keep.
      assert.equal((await post(automation.id, 'disable')).status, 200);
      assert.equal((await post(automation.id, 'enable')).status, 200);
      const disabled = await post(automation.id, 'disable', { in_flight: 'cancel' });
      assert.equal(disabled.status, 200, disabled.text);
      assert.equal(disabled.body.status, 'disabled');
      assert.equal(disabled.body.disabled_reason, 'user');
      const again = await post(automation.id, 'enable');
      assert.equal(again.body.status, 'enabled');
      assert.equal(again.body.disabled_reason, null);
      assert.deepEqual(await auditActions(server, owner.token, automation.id), [
        'automation.created',
        'automation.deployed',
        'automation.enabled',
        'automation.disabled',
        'automation.enabled',
        'automation.disabled',
        'automation.enabled',
      ]);
    });

    it('deleting answers deleted, then the automation is not found', async () => {
      const automation = await created({ definition: definitionWith() });
      const response = await server.request('DELETE', `/v1/automations/${automation.id}?cancel_runs=true`, { token: owner.token });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, { id: automation.id, object: 'automation', deleted: true });
      assertError(await get(automation.id), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/automations/${automation.id}`, { token: owner.token }), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/automations/${automation.id}?cancel_runs=maybe`, { token: owner.token }), 400, 'validation_failed');
    });
  });

  describe('limits', () => {
    it(`the ${MAX_ENABLED_AUTOMATIONS + 1}th enabled automation of an organization is refused`, async (t) => {
      const { server: own, alpha } = await startServerWithTwoOrganizations(t);
      const now = own.clock.now().toISOString();
      const rows = Array.from({ length: MAX_ENABLED_AUTOMATIONS }, () => ({
        id: newId('automation'),
        organization_id: alpha.organizationId,
        mode: 'live',
        connection_id: null,
        name: 'Filler',
        description: null,
        status: 'enabled',
        disabled_reason: null,
        trigger_type: 'api',
        trigger_event: null,
        deployed_version: 1,
        previous_deployed_version: null,
        latest_version: 1,
        consecutive_failures: 0,
        metadata: '{}',
        created_at: now,
        updated_at: now,
        deleted_at: null,
      }));
      await own.app.store.db.insertInto('automations').values(rows).execute();
      const automation = (await own.request('POST', '/v1/automations', { token: alpha.token, body: { name: 'One more', definition: definitionWith([done]) } }))
        .body;
      assert.equal((await own.request('POST', `/v1/automations/${automation.id}/deploy`, { token: alpha.token, body: { version: 1 } })).status, 200);
      const error = assertError(await own.request('POST', `/v1/automations/${automation.id}/enable`, { token: alpha.token }), 409, 'resource_limit_reached');
      assert.equal(error.param, null);
      await own.app.store.db.updateTable('automations').set({ status: 'disabled' }).where('id', '=', rows[0]!.id).execute();
      assert.equal((await own.request('POST', `/v1/automations/${automation.id}/enable`, { token: alpha.token })).status, 200);
    });
  });

  describe('failed runs', () => {
    const record = (automationId: string, ending: 'succeeded' | 'failed', times = 1) =>
      server.app.store.db.transaction().execute(async (trx) => {
        for (let i = 0; i < times; i++) await server.app.services.automations.recordRunEnded(trx, owner.organizationId, automationId, ending);
      });

    it('a success resets the count; the 10th failure in a row disables the automation, with an event, an audit entry and a mail to the owner', async () => {
      const admin = await addMember(server, owner.organizationId, 'admin');
      const automation = await deployed({ connection_id: line.id });
      assert.equal((await post(automation.id, 'enable')).status, 200);
      await record(automation.id, 'failed', 9);
      assert.equal((await get(automation.id)).body.consecutive_failures, 9);
      await record(automation.id, 'succeeded');
      assert.equal((await get(automation.id)).body.consecutive_failures, 0);
      await record(automation.id, 'failed', 9);
      assert.equal((await get(automation.id)).body.status, 'enabled');
      await record(automation.id, 'failed');
      const disabled = (await get(automation.id)).body;
      assert.equal(disabled.status, 'disabled');
      assert.equal(disabled.disabled_reason, 'consecutive_failures');
      assert.equal(disabled.consecutive_failures, 10);

      const events = await server.app.store.db.selectFrom('events').selectAll().where('type', '=', 'automation.auto_disabled').execute();
      const event = events.find((each) => (JSON.parse(each.data) as Json).id === automation.id);
      assert.ok(event, 'automation.auto_disabled was emitted');
      assert.equal(event.connection_id, line.id);
      assert.deepEqual(JSON.parse(event.data), disabled);
      assert.ok((await auditActions(server, owner.token, automation.id)).includes('automation.auto_disabled'));

      const mails = await server.app.store.db.selectFrom('mails').selectAll().where('organization_id', '=', owner.organizationId).execute();
      const about = [];
      for (const mail of mails) {
        const opened = (await server.app.services.mail.find(mail.id))!;
        if (opened.text.includes(automation.id)) about.push(opened);
      }
      assert.deepEqual(
        about.map((mail) => mail.to),
        [owner.email],
      );
      assert.notEqual(admin.email, owner.email);
      assert.match(about[0]!.subject, /disabled/);

      // An eleventh failure (a run that was in flight) changes nothing more: no second event or mail.
      await record(automation.id, 'failed');
      const after = await server.app.store.db.selectFrom('events').select('data').where('type', '=', 'automation.auto_disabled').execute();
      assert.equal(after.filter((each) => (JSON.parse(each.data) as Json).id === automation.id).length, 1);
    });

    it('the runs module finds enabled automations by trigger, and a version to run', async () => {
      const automation = await deployed();
      const service = server.app.services.automations;
      const db = server.app.store.db;
      const before = await service.deployedForTrigger(db, owner.organizationId, { type: 'message_received' });
      assert.ok(!before.some((each) => each.automationId === automation.id), 'a draft starts no runs');
      assert.equal((await post(automation.id, 'enable')).status, 200);
      const found = (await service.deployedForTrigger(db, owner.organizationId, { type: 'message_received' })).find(
        (each) => each.automationId === automation.id,
      );
      assert.deepEqual(found, {
        automationId: automation.id,
        organizationId: owner.organizationId,
        mode: 'live',
        connectionId: null,
        version: 1,
        definition: stored(definitionWith()),
      });
      assert.deepEqual(await service.deployedForTrigger(db, other.organizationId, { type: 'message_received' }), []);
      const run = await service.versionForRun(db, owner.organizationId, automation.id);
      assert.equal(run?.version, 1);
      assert.equal(run?.status, 'enabled');
      assert.equal(await service.versionForRun(db, owner.organizationId, automation.id, 2), undefined);
      assert.equal(await service.versionForRun(db, other.organizationId, automation.id), undefined);
    });
  });

  describe('risky actions: the organization setting', () => {
    it('only owners and admins change it, from the dashboard; it shows on the organization', async () => {
      const admin = await signUp(server);
      const patch = (body: Json, token = admin.token) => server.request('PATCH', '/v1/organization', { token, body });
      const turnedOn = await patch({ settings: { require_approval_for_risky_actions: true } });
      assert.equal(turnedOn.status, 200, turnedOn.text);
      assert.deepEqual(turnedOn.body.settings, { require_approval_for_risky_actions: true });
      const identity = await server.request('GET', '/v1/identity', { token: admin.token });
      assert.equal(identity.body.organization.settings.require_approval_for_risky_actions, true);
      assert.ok((await auditActions(server, admin.token, admin.organizationId)).includes('organization.updated'));
      const agent = await addMember(server, admin.organizationId, 'agent');
      assertError(await patch({ settings: { require_approval_for_risky_actions: false } }, agent.token), 403, 'role_insufficient');
      const key = await createKey(server, admin.token, { kind: 'organization', mode: 'live' });
      assertError(await patch({ settings: { require_approval_for_risky_actions: false } }, key.key), 403, 'credential_kind_not_allowed');
      assert.equal(assertError(await patch({ settings: { surprise: true } }), 400, 'validation_failed').param, '/settings/surprise');
      assert.equal(
        assertError(await patch({ settings: { require_approval_for_risky_actions: 'yes' } }), 400, 'validation_failed').param,
        '/settings/require_approval_for_risky_actions',
      );
    });

    it('on: a live deploy refuses a marketing send or a connector call that no approval gates; gated, test mode or off, it deploys', async () => {
      const admin = await signUp(server);
      const number = await createConnection(server, admin);
      const testNumber = await createConnection(server, admin, { test: true });
      for (const connection of [number, testNumber]) {
        await defineTemplate(server, admin.token, connection, { name: 'spring_sale', category: 'marketing', text: 'Sale {{1}}', examples: ['now'] });
      }
      const on = await server.request('PATCH', '/v1/organization', { token: admin.token, body: { settings: { require_approval_for_risky_actions: true } } });
      assert.equal(on.status, 200, on.text);
      const sale = { id: 'sale', type: 'send_template', template: 'spring_sale', language: 'en_US', next: 'done' };
      const ungated = { trigger: { type: 'api' }, start: 'sale', steps: [sale, done] };
      const gated = {
        trigger: { type: 'api' },
        start: 'ask',
        steps: [{ id: 'ask', type: 'request_approval', title: 'Send the sale?', action_step: 'sale', approvers: { roles: ['owner'] } }, sale, done],
      };
      const deployOn = async (connectionId: string, definition: Json) => {
        const automation = await server.request('POST', '/v1/automations', {
          token: admin.token,
          body: { name: 'Sale', connection_id: connectionId, definition },
        });
        assert.equal(automation.status, 201, automation.text);
        return server.request('POST', `/v1/automations/${automation.body.id}/deploy`, { token: admin.token, body: { version: 1 } });
      };
      const refused = assertError(await deployOn(number.id, ungated), 409, 'invalid_state');
      assert.equal(refused.param, '/version');
      assert.equal(refused.details[0].param, '/definition/steps/0');
      assert.match(refused.message, /sends a marketing template/);
      const call = { id: 'call', type: 'http_request', connector_account_id: newId('connectorAccount'), method: 'GET', path: '/orders' };
      const calling = assertError(await deployOn(number.id, { trigger: { type: 'api' }, start: 'call', steps: [call] }), 409, 'invalid_state');
      assert.match(calling.message, /calls a connector/);
      assert.equal((await deployOn(number.id, gated)).status, 200);
      assert.equal((await deployOn(testNumber.id, ungated)).status, 200, 'test mode is not gated');
      await server.request('PATCH', '/v1/organization', { token: admin.token, body: { settings: { require_approval_for_risky_actions: false } } });
      assert.equal((await deployOn(number.id, ungated)).status, 200, 'the setting off, nothing is gated');
    });
  });
});
