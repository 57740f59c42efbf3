import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { SECOND } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { validatorCompiler } from '../../http/validation.ts';
import { suiteScope, type TestServer } from '../../../test/harness.ts';
import {
  addMember,
  assertError,
  createConnection,
  createKey,
  settle,
  signUp,
  type SignedUp,
  startServerWithOwner,
  startServerWithTwoOrganizations,
} from '../../../test/factories.ts';
import { TemplateSendSchema, type TemplateSendInput } from './index.ts';

type Json = Record<string, any>;

const ORDER_UPDATE = {
  name: 'order_update',
  language: 'en_US',
  category: 'utility',
  components: [
    { type: 'header', format: 'text', text: 'Order {{1}}', example: 'A-1' },
    { type: 'body', text: 'Hi {{1}}, your order {{2}} ships on {{3}}.', examples: ['Ana', 'EUR 12.34', 'Monday'] },
    { type: 'footer', text: 'Reply STOP to opt out' },
    {
      type: 'buttons',
      buttons: [
        { type: 'quick_reply', text: 'Stop' },
        { type: 'url', text: 'Track', url: 'https://example.com/track/{{1}}', example: 'https://example.com/track/A-1' },
        { type: 'copy_code', example: 'SAVE10' },
      ],
    },
  ],
};

/** A template as the provider reviews it: submitted through the API, then decided at the sandbox. */
async function createTemplate(server: TestServer, token: string, connectionId: string, body: Json): Promise<Json> {
  const response = await server.request('POST', '/v1/templates', { token, body: { connection_id: connectionId, ...body } });
  assert.equal(response.status, 201, response.text);
  return response.body;
}

async function review(server: TestServer, template: Json, status: string): Promise<void> {
  const response = await server.request('POST', '/sandbox/control/template-status', { body: { template_id: template.provider_template_id, status } });
  assert.equal(response.status, 200, response.text);
  await settle(server);
}

async function statusEvents(server: TestServer, organizationId: string, templateId: string): Promise<string[]> {
  const rows = await server.app.store.db
    .selectFrom('events')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('type', '=', 'template.status_changed')
    .orderBy('id')
    .execute();
  return rows
    .map((row) => JSON.parse(row.data) as Json)
    .filter((template) => template.id === templateId)
    .map((template) => template.status);
}

const ids = (response: { body: { data: { id: string }[] } }) => response.body.data.map((item) => item.id);

describe('templates: create, read, delete, sync', () => {
  let server: TestServer;
  let owner: SignedUp;
  let connection: Json;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    connection = await createConnection(server, owner);
  });
  const create = (body: Json, token = owner.token) => createTemplate(server, token, connection.id, body);
  const post = (body: Json) => server.request('POST', '/v1/templates', { token: owner.token, body: { connection_id: connection.id, ...body } });

  it('create submits the template to the provider and answers 201 with it, pending review', async () => {
    const response = await post(ORDER_UPDATE);
    assert.equal(response.status, 201, response.text);
    const template = response.body;
    assert.match(template.id, /^tpl_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.deepEqual(
      { ...template, id: undefined, provider_template_id: undefined },
      {
        id: undefined,
        provider_template_id: undefined,
        object: 'template',
        connection_id: connection.id,
        name: 'order_update',
        language: 'en_US',
        category: 'utility',
        status: 'pending',
        status_reason: null,
        parameter_format: 'positional',
        components: ORDER_UPDATE.components,
        created_at: '2026-06-01T12:00:00.000Z',
        updated_at: '2026-06-01T12:00:00.000Z',
      },
    );
    const atProvider = await server.app.sandbox!.templates.find(template.provider_template_id);
    assert.equal(atProvider?.name, 'order_update');
    assert.equal(atProvider?.status, 'PENDING');
    assert.deepEqual((await server.request('GET', `/v1/templates/${template.id}`, { token: owner.token })).body, template);
    const audit = await server.request('GET', `/v1/events?target_id=${template.id}`, { token: owner.token });
    assert.deepEqual(
      audit.body.data.map((event: { action: string }) => event.action),
      ['template.created'],
    );
  });

  it("the provider's review shows on the template and is template.status_changed", async () => {
    const template = await create({ ...ORDER_UPDATE, name: 'reviewed_one' });
    await review(server, template, 'APPROVED');
    const approved = await server.request('GET', `/v1/templates/${template.id}`, { token: owner.token });
    assert.equal(approved.body.status, 'approved');
    await review(server, template, 'PAUSED');
    assert.equal((await server.request('GET', `/v1/templates/${template.id}`, { token: owner.token })).body.status, 'paused');
    assert.deepEqual(await statusEvents(server, owner.organizationId, template.id), ['approved', 'paused']);
  });

  it('named templates keep their examples by placeholder name; every component kind round-trips', async () => {
    const components = [
      { type: 'header', format: 'text', text: 'Hello {{first_name}}', example: 'Ana' },
      { type: 'body', text: 'Dear {{first_name}}, you owe {{amount}}.', examples: { first_name: 'Ana', amount: '12 EUR' } },
      { type: 'footer', text: 'Thanks' },
      {
        type: 'buttons',
        buttons: [
          { type: 'phone_number', text: 'Call us', phone_number: '+447700900123' },
          { type: 'url', text: 'Site', url: 'https://example.com' },
          { type: 'flow', text: 'Book', flow_id: '1234', flow_action: 'navigate', navigate_screen: 'START' },
        ],
      },
    ];
    const template = await create({ name: 'named_everything', language: 'pt_BR', category: 'marketing', parameter_format: 'named', components });
    assert.equal(template.parameter_format, 'named');
    assert.deepEqual(template.components, components);
    const atProvider = (await server.app.sandbox!.templates.find(template.provider_template_id))!;
    assert.equal(atProvider.parameterFormat, 'NAMED');
    assert.deepEqual(atProvider.components[1], {
      type: 'BODY',
      text: 'Dear {{first_name}}, you owe {{amount}}.',
      example: {
        body_text_named_params: [
          { param_name: 'first_name', example: 'Ana' },
          { param_name: 'amount', example: '12 EUR' },
        ],
      },
    });
  });

  it('media and location headers are accepted', async () => {
    for (const [name, header] of [
      ['with_image', { type: 'header', format: 'image' }],
      ['with_place', { type: 'header', format: 'location' }],
    ] as const) {
      const template = await create({ name, language: 'en', category: 'marketing', components: [header, { type: 'body', text: 'See above.' }] });
      assert.deepEqual(template.components[0], header);
    }
  });

  describe('a definition is refused before the provider', () => {
    const refused = async (body: Json, param: string, detail?: string) => {
      const before = (await server.app.sandbox!.templates.list(connection.waba_id, {})).length;
      const error = assertError(await post(body), 400, 'validation_failed');
      assert.equal(error.param, param, JSON.stringify(error));
      if (detail) assert.equal(error.details[0].code, detail);
      assert.equal((await server.app.sandbox!.templates.list(connection.waba_id, {})).length, before, 'nothing reached the provider');
      return error;
    };
    const body = (text: string, extra: Json = {}) => ({ type: 'body', text, ...extra });
    const draft = (components: unknown[], extra: Json = {}) => ({ name: 'refused', language: 'en_US', category: 'utility', components, ...extra });

    it('unknown fields, at the top and inside a component', async () => {
      await refused({ ...draft([body('Hi')]), colour: 'blue' }, '/colour', 'unknown_field');
      await refused(draft([body('Hi', { colour: 'blue' })]), '/components/0/colour', 'unknown_field');
      await refused(draft([{ type: 'header', format: 'image', text: 'Hi' }, body('Hi')]), '/components/0/text', 'unknown_field');
      await refused(draft([{ type: 'header', format: 'gif' }, body('Hi')]), '/components/0/format', 'invalid_value');
      await refused(draft([{ type: 'carousel' }, body('Hi')]), '/components/0/type', 'invalid_value');
      await refused(draft([{ text: 'Hi' }]), '/components/0/type', 'missing');
    });

    it('a name with capitals, dashes or spaces', async () => {
      for (const name of ['Order_Ready', 'order-ready', 'order ready', '']) await refused(draft([body('Hi')], { name }), '/name');
    });

    it('a category or parameter format the provider does not know', async () => {
      await refused(draft([body('Hi')], { category: 'promotional' }), '/category', 'invalid_value');
      await refused(draft([body('Hi')], { category: 'UTILITY' }), '/category', 'invalid_value');
      await refused(draft([body('Hi')], { parameter_format: 'numbered' }), '/parameter_format', 'invalid_value');
    });

    it('missing, empty or bodiless components', async () => {
      const { components: _, ...noComponents } = draft([]);
      await refused(noComponents, '/components', 'missing');
      await refused(draft([]), '/components', 'too_few');
      await refused(draft([{ type: 'footer', text: 'Thanks' }]), '/components', 'missing');
      await refused(draft([body('Hi'), body('Again')]), '/components/1/type');
    });

    it('placeholders with gaps, of the other format, or without examples', async () => {
      await refused(draft([body('Hi {{1}} and {{3}}', { examples: ['a', 'b'] })]), '/components/0/text');
      await refused(draft([body('Hi {{first_name}}', { examples: ['a'] })]), '/components/0/text');
      await refused(draft([body('Hi {{1}}', { examples: { first: 'a' } })], { parameter_format: 'named' }), '/components/0/text');
      await refused(draft([body('Hi {{1}}')]), '/components/0/examples', 'missing');
      await refused(draft([body('Hi {{1}} {{2}}', { examples: ['only one'] })]), '/components/0/examples');
      await refused(draft([body('Hi {{name}}', { examples: { name: 'a', other: 'b' } })], { parameter_format: 'named' }), '/components/0/examples/other');
      await refused(draft([body('Hi', { examples: ['a'] })]), '/components/0/examples');
    });

    it('headers with two placeholders or none exemplified, footers with placeholders, dynamic URLs without an example', async () => {
      await refused(draft([{ type: 'header', format: 'text', text: '{{1}} {{2}}', example: 'a' }, body('Hi')]), '/components/0/text');
      await refused(draft([{ type: 'header', format: 'text', text: 'Order {{1}}' }, body('Hi')]), '/components/0/example', 'missing');
      await refused(draft([body('Hi'), { type: 'footer', text: 'Bye {{1}}' }]), '/components/1/text');
      await refused(
        draft([body('Hi'), { type: 'buttons', buttons: [{ type: 'url', text: 'Go', url: 'https://example.com/{{1}}' }] }]),
        '/components/1/buttons/0/example',
        'missing',
      );
      await refused(
        draft([body('Hi'), { type: 'buttons', buttons: [{ type: 'url', text: 'Go', url: 'https://example.com/{{1}}/x', example: 'x' }] }]),
        '/components/1/buttons/0/url',
      );
    });

    it('a button of a kind the provider does not have, or too many buttons', async () => {
      await refused(draft([body('Hi'), { type: 'buttons', buttons: [{ type: 'teleport', text: 'Go' }] }]), '/components/1/buttons/0/type', 'invalid_value');
      await refused(
        draft([body('Hi'), { type: 'buttons', buttons: [{ type: 'phone_number', text: 'Call' }] }]),
        '/components/1/buttons/0/phone_number',
        'missing',
      );
      const eleven = Array.from({ length: 11 }, (_, index) => ({ type: 'quick_reply', text: `Option ${index}` }));
      await refused(draft([body('Hi'), { type: 'buttons', buttons: eleven }]), '/components/1/buttons', 'too_many');
    });

    it('a name that exists in that language is 409 resource_exists on /name; another language is another template', async () => {
      const first = await create({ ...ORDER_UPDATE, name: 'twice' });
      const error = assertError(await post({ ...ORDER_UPDATE, name: 'twice' }), 409, 'resource_exists');
      assert.equal(error.param, '/name');
      assert.ok(error.message.includes(first.id));
      const other = await create({ ...ORDER_UPDATE, name: 'twice', language: 'es' });
      assert.equal(other.language, 'es');
    });
  });

  it("the provider's refusal is provider_rejected with the provider's code, and nothing is stored", async () => {
    await server.request('POST', '/sandbox/control/behaviour', { body: { fail_next: { code: 100, details: 'Invalid parameter' } } });
    const error = assertError(await post({ ...ORDER_UPDATE, name: 'provider_says_no' }), 502, 'provider_rejected');
    assert.equal(error.provider.code, 100);
    const listed = await server.request('GET', '/v1/templates?name=provider_says_no', { token: owner.token });
    assert.deepEqual(listed.body.data, []);
  });

  it('a connection of another organization is 404 on /connection_id; a test key on a live connection is 403', async () => {
    const other = await signUp(server, { organizationName: 'Other' });
    const theirs = await createConnection(server, other);
    const error = assertError(
      await server.request('POST', '/v1/templates', { token: owner.token, body: { ...ORDER_UPDATE, name: 'not_mine', connection_id: theirs.id } }),
      404,
      'resource_not_found',
    );
    assert.equal(error.param, '/connection_id');
    const testKey = await createKey(server, owner.token, { kind: 'organization', mode: 'test' });
    const mode = assertError(
      await server.request('POST', '/v1/templates', { token: testKey.key, body: { ...ORDER_UPDATE, name: 'wrong_mode', connection_id: connection.id } }),
      403,
      'test_key_on_live_connection',
    );
    assert.equal(mode.param, '/connection_id');
  });

  it('get: an unknown id is 404, a malformed one 400 on /path/id', async () => {
    assertError(await server.request('GET', '/v1/templates/tpl_01JZ8Q6W3M4T2V9X0B7C5D1E2F', { token: owner.token }), 404, 'resource_not_found');
    const error = assertError(await server.request('GET', '/v1/templates/ct_01JZ8Q6W3M4T2V9X0B7C5D1E2F', { token: owner.token }), 400, 'validation_failed');
    assert.equal(error.param, '/path/id');
  });

  it('delete removes it at the provider and keeps the record as deleted; again answers the same; the name is free again', async () => {
    const template = await create({ ...ORDER_UPDATE, name: 'short_lived' });
    await review(server, template, 'APPROVED');
    server.clock.advance(SECOND);
    const response = await server.request('DELETE', `/v1/templates/${template.id}`, { token: owner.token });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body, { id: template.id, object: 'template', deleted: true });
    assert.equal(await server.app.sandbox!.templates.find(template.provider_template_id), undefined);
    const shown = await server.request('GET', `/v1/templates/${template.id}`, { token: owner.token });
    assert.equal(shown.body.status, 'deleted');
    assert.equal(shown.body.updated_at, server.clock.now().toISOString());
    assert.deepEqual(await statusEvents(server, owner.organizationId, template.id), ['approved', 'deleted']);
    assert.deepEqual((await server.request('DELETE', `/v1/templates/${template.id}`, { token: owner.token })).body, response.body);
    const audit = await server.request('GET', `/v1/events?target_id=${template.id}&order=asc`, { token: owner.token });
    assert.deepEqual(
      audit.body.data.map((event: { action: string }) => event.action),
      ['template.created', 'template.deleted'],
    );
    const again = await create({ ...ORDER_UPDATE, name: 'short_lived' });
    assert.notEqual(again.id, template.id);
  });

  it('delete of a template the provider no longer has is provider_rejected; sync then marks it deleted', async () => {
    const template = await create({ ...ORDER_UPDATE, name: 'gone_already' });
    await server.app.sandbox!.templates.remove(template.provider_template_id);
    assertError(await server.request('DELETE', `/v1/templates/${template.id}`, { token: owner.token }), 502, 'provider_rejected');
    assert.equal((await server.request('POST', '/v1/templates/sync', { token: owner.token, body: { connection_id: connection.id } })).status, 200);
    assert.equal((await server.request('GET', `/v1/templates/${template.id}`, { token: owner.token })).body.status, 'deleted');
  });

  describe('sync', () => {
    const sync = (body: Json, token = owner.token) => server.request('POST', '/v1/templates/sync', { token, body });

    it("records the account's templates and answers a summary of what moved", async () => {
      // A number of its own: its account holds only what this test puts there.
      const connection = await createConnection(server, owner);
      // Made at the provider directly, as the business manager would.
      const outside = await server.app.sandbox!.templates.create(connection.waba_id, {
        name: 'made_elsewhere',
        language: 'en_US',
        category: 'UTILITY',
        components: [{ type: 'BODY', text: 'Hi {{1}}', example: { body_text: [['Ana']] } }],
      });
      const response = await sync({ connection_id: connection.id });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, {
        object: 'template_sync',
        connection_id: connection.id,
        total: 2,
        added: 2,
        status_changed: 0,
        deleted: 0,
        synced_at: server.clock.now().toISOString(),
      });
      const listed = await server.request('GET', `/v1/templates?connection_id=${connection.id}`, { token: owner.token });
      const byName = new Map<string, Json>(listed.body.data.map((t: Json) => [t.name, t]));
      assert.deepEqual([...byName.keys()].sort(), ['hello_world', 'made_elsewhere']);
      assert.equal(byName.get('hello_world')!.status, 'approved');
      assert.equal(byName.get('made_elsewhere')!.status, 'pending');
      assert.deepEqual(byName.get('made_elsewhere')!.components, [{ type: 'body', text: 'Hi {{1}}', examples: ['Ana'] }]);

      await server.app.sandbox!.templates.update(outside.id, { status: 'APPROVED', reason: null });
      await server.app.sandbox!.templates.remove((await server.app.sandbox!.templates.findByName(connection.waba_id, 'hello_world', 'en_US'))!.id);
      const again = await sync({ connection_id: connection.id });
      assert.deepEqual(
        { ...again.body, synced_at: undefined },
        {
          object: 'template_sync',
          connection_id: connection.id,
          total: 1,
          added: 0,
          status_changed: 1,
          deleted: 1,
          synced_at: undefined,
        },
      );
    });

    it('an invisible connection is 404 on /connection_id; the body is strict', async () => {
      const other = await signUp(server, { organizationName: 'Other' });
      const theirs = await createConnection(server, other);
      assert.equal(assertError(await sync({ connection_id: theirs.id }), 404, 'resource_not_found').param, '/connection_id');
      assert.equal(assertError(await sync({}), 400, 'validation_failed').param, '/connection_id');
      assert.equal(assertError(await sync({ connection_id: connection.id, force: true }), 400, 'validation_failed').param, '/force');
    });

    it('a disconnected connection cannot sync: connection_inactive', async () => {
      const gone = await createConnection(server, owner);
      assert.equal((await server.request('DELETE', `/v1/connections/${gone.id}`, { token: owner.token })).status, 200);
      assertError(await sync({ connection_id: gone.id }), 409, 'connection_inactive');
    });
  });
});

describe('templates: list', () => {
  let server: TestServer;
  let owner: SignedUp;
  const made: Json[] = [];
  let first: Json;
  let second: Json;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    first = await createConnection(server, owner);
    second = await createConnection(server, owner);
    const specs = [
      [first, 'alpha', 'en_US', 'utility'],
      [first, 'alpha', 'es', 'utility'],
      [first, 'beta', 'en_US', 'marketing'],
      [second, 'gamma', 'en_US', 'marketing'],
      [second, 'alpha', 'en_US', 'utility'],
    ] as const;
    for (const [connection, name, language, category] of specs) {
      made.push(
        await createTemplate(server, owner.token, connection.id, { name, language, category, components: [{ type: 'body', text: `Hi from ${name}` }] }),
      );
      server.clock.advance(SECOND);
    }
    await review(server, made[1]!, 'APPROVED');
    await review(server, made[3]!, 'REJECTED');
  });
  const list = (query: string) => server.request('GET', `/v1/templates${query}`, { token: owner.token });

  it('newest first, paged with the list rules', async () => {
    const page = await list('?limit=2');
    assert.equal(page.body.object, 'list');
    assert.deepEqual(ids(page), [made[4]!.id, made[3]!.id]);
    assert.equal(page.body.has_more, true);
    assert.equal(page.body.next_cursor, made[3]!.id);
    assert.deepEqual(ids(await list(`?limit=2&after=${page.body.next_cursor}`)), [made[2]!.id, made[1]!.id]);
    assert.deepEqual(ids(await list(`?limit=2&before=${made[1]!.id}`)), [made[3]!.id, made[2]!.id]);
    const ascending = await list('?order=asc');
    assert.deepEqual(
      ids(ascending),
      made.map((template) => template.id),
    );
    assert.equal(ascending.body.next_cursor, null);
    assert.deepEqual(
      ids(await list('?order=asc&created_after=2026-06-01T12:00:00.500Z&created_before=2026-06-01T12:00:03.500Z')),
      made.slice(1, 4).map((t) => t.id),
    );
    assertError(await list('?limit=101'), 400, 'validation_failed');
  });

  it('filters by connection_id, status, name, language and category, together too', async () => {
    assert.deepEqual(ids(await list(`?connection_id=${second.id}`)), [made[4]!.id, made[3]!.id]);
    assert.deepEqual(ids(await list('?status=approved')), [made[1]!.id]);
    assert.deepEqual(ids(await list('?status=rejected')), [made[3]!.id]);
    assert.deepEqual(ids(await list('?name=alpha')), [made[4]!.id, made[1]!.id, made[0]!.id]);
    assert.deepEqual(ids(await list('?language=es')), [made[1]!.id]);
    assert.deepEqual(ids(await list('?category=marketing')), [made[3]!.id, made[2]!.id]);
    assert.deepEqual(ids(await list(`?name=alpha&language=en_US&connection_id=${first.id}`)), [made[0]!.id]);
  });

  it('bad filters and cursors are validation_failed', async () => {
    assert.equal(assertError(await list('?status=happy'), 400, 'validation_failed').param, '/query/status');
    assert.equal(assertError(await list('?category=promo'), 400, 'validation_failed').param, '/query/category');
    assert.equal(assertError(await list('?name=Alpha'), 400, 'validation_failed').param, '/query/name');
    assert.equal(assertError(await list('?colour=blue'), 400, 'validation_failed').param, '/query/colour');
    assert.equal(assertError(await list(`?status=approved&after=${made[0]!.id}`), 400, 'validation_failed').param, '/query/after');
  });
});

describe('templates: who sees what', () => {
  let server: TestServer;
  let alpha: SignedUp;
  let beta: SignedUp;
  let one: Json;
  let two: Json;
  let testConnection: Json;
  let onOne: Json;
  let onTwo: Json;
  let onTest: Json;
  const suite = suiteScope();
  before(async () => {
    ({ server, alpha, beta } = await startServerWithTwoOrganizations(suite));
    one = await createConnection(server, alpha);
    two = await createConnection(server, alpha);
    testConnection = await createConnection(server, alpha, { test: true });
    const body = { name: 'visible', language: 'en_US', category: 'utility', components: [{ type: 'body', text: 'Hi' }] };
    onOne = await createTemplate(server, alpha.token, one.id, body);
    onTwo = await createTemplate(server, alpha.token, two.id, body);
    onTest = await createTemplate(server, alpha.token, testConnection.id, body);
  });

  it("another organization's template is 404 everywhere, and lists show none of it", async () => {
    const betaKey = await createKey(server, beta.token, { kind: 'organization', mode: 'live' });
    for (const token of [beta.token, betaKey.key]) {
      assertError(await server.request('GET', `/v1/templates/${onOne.id}`, { token }), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/templates/${onOne.id}`, { token }), 404, 'resource_not_found');
      assert.deepEqual((await server.request('GET', `/v1/templates?connection_id=${one.id}`, { token })).body.data, []);
      assert.equal(assertError(await server.request('GET', `/v1/templates?after=${onOne.id}`, { token }), 400, 'validation_failed').param, '/query/after');
    }
    assert.equal((await server.request('GET', `/v1/templates/${onOne.id}`, { token: alpha.token })).body.status, 'pending', 'nothing of it changed');
  });

  it("a connection key sees its own connection's templates only", async () => {
    const key = await createKey(server, alpha.token, { kind: 'connection', mode: 'live', connection_id: two.id });
    assert.deepEqual(ids(await server.request('GET', '/v1/templates', { token: key.key })), [onTwo.id]);
    assert.equal((await server.request('GET', `/v1/templates/${onTwo.id}`, { token: key.key })).status, 200);
    assertError(await server.request('GET', `/v1/templates/${onOne.id}`, { token: key.key }), 404, 'resource_not_found');
    assertError(await server.request('DELETE', `/v1/templates/${onOne.id}`, { token: key.key }), 404, 'resource_not_found');
    const create = await server.request('POST', '/v1/templates', { token: key.key, body: { ...ORDER_UPDATE, connection_id: one.id } });
    assert.equal(assertError(create, 404, 'resource_not_found').param, '/connection_id');
    const sync = await server.request('POST', '/v1/templates/sync', { token: key.key, body: { connection_id: one.id } });
    assert.equal(assertError(sync, 404, 'resource_not_found').param, '/connection_id');
  });

  it("a test key sees only test connections' templates; a live key and a dashboard token see both", async () => {
    const live = await createKey(server, alpha.token, { kind: 'organization', mode: 'live' });
    const test = await createKey(server, alpha.token, { kind: 'organization', mode: 'test' });
    assert.deepEqual(ids(await server.request('GET', '/v1/templates?order=asc', { token: live.key })), [onOne.id, onTwo.id, onTest.id]);
    assert.deepEqual(ids(await server.request('GET', '/v1/templates', { token: test.key })), [onTest.id]);
    assertError(await server.request('GET', `/v1/templates/${onOne.id}`, { token: test.key }), 404, 'resource_not_found');
    assert.equal((await server.request('GET', `/v1/templates/${onTest.id}`, { token: live.key })).status, 200);
    assert.deepEqual(ids(await server.request('GET', '/v1/templates?order=asc', { token: alpha.token })), [onOne.id, onTwo.id, onTest.id]);
  });

  it('templates:read lists and gets but cannot create, delete or sync; an agent reads only', async () => {
    const readOnly = await createKey(server, alpha.token, { kind: 'organization', mode: 'live', scopes: ['templates:read'] });
    const agent = await addMember(server, alpha.organizationId, 'agent');
    for (const token of [readOnly.key, agent.token]) {
      assert.equal((await server.request('GET', `/v1/templates/${onOne.id}`, { token })).status, 200);
      const refused = [
        ['POST', '/v1/templates', { ...ORDER_UPDATE, connection_id: one.id }],
        ['POST', '/v1/templates/sync', { connection_id: one.id }],
        ['DELETE', `/v1/templates/${onOne.id}`, undefined],
      ] as const;
      for (const [method, path, body] of refused) {
        const error = assertError(await server.request(method, path, { token, ...(body ? { body } : {}) }), 403, 'scope_missing');
        assert.equal(error.required_scope, 'templates:write');
      }
    }
    const unrelated = await createKey(server, alpha.token, { kind: 'organization', mode: 'live', scopes: ['messages:read'] });
    assert.equal(assertError(await server.request('GET', '/v1/templates', { token: unrelated.key }), 403, 'scope_missing').required_scope, 'templates:read');
  });
});

describe('templates: the checks before a send (prepareSend)', () => {
  let server: TestServer;
  let owner: SignedUp;
  let connection: Json;
  let other: Json;
  const templates: Record<string, Json> = {};
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    connection = await createConnection(server, owner);
    other = await createConnection(server, owner);
    const body = (text: string, examples?: unknown) => ({ type: 'body', text, ...(examples === undefined ? {} : { examples }) });
    const specs: Record<string, Json> = {
      order_update: ORDER_UPDATE,
      welcome_named: {
        category: 'marketing',
        parameter_format: 'named',
        components: [
          { type: 'header', format: 'text', text: 'Hello {{first_name}}', example: 'Ana' },
          body('Dear {{first_name}}, you owe {{amount}} by {{due}}.', { first_name: 'Ana', amount: '12 EUR', due: 'Monday' }),
        ],
      },
      invoice_doc: { components: [{ type: 'header', format: 'document' }, body('Your invoice is attached.')] },
      promo_image: { category: 'marketing', components: [{ type: 'header', format: 'image' }, body('New in store.')] },
      store_location: { components: [{ type: 'header', format: 'location' }, body('Find us at {{1}}.', ['the mall'])] },
      static_hello: { components: [{ type: 'header', format: 'text', text: 'Hello' }, body('Thanks for your order.')] },
      plain_body: { components: [body('Just text.')] },
    };
    for (const [name, spec] of Object.entries(specs)) {
      const template = await createTemplate(server, owner.token, connection.id, { name, language: 'en_US', category: 'utility', ...spec });
      await review(server, template, 'APPROVED');
      templates[name] = template;
    }
    templates.awaiting = await createTemplate(server, owner.token, connection.id, {
      name: 'awaiting',
      language: 'en_US',
      category: 'utility',
      components: [body('Soon.')],
    });
    templates.elsewhere = await createTemplate(server, owner.token, other.id, {
      name: 'elsewhere',
      language: 'en_US',
      category: 'utility',
      components: [body('Hi.')],
    });
    await review(server, templates.elsewhere, 'APPROVED');
  });

  const prepare = (input: TemplateSendInput, param?: string) =>
    server.app.services.templates.prepareSend(server.app.store.db, { organizationId: owner.organizationId, connectionId: connection.id }, input, param);

  /** Asserts the send is refused with this code and param, and returns the error. */
  async function refused(input: TemplateSendInput, code: string, param: string, param2?: string): Promise<AppError> {
    const error = await prepare(input, param2).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof AppError, `expected a refusal, got ${JSON.stringify(error)}`);
    assert.equal(error.code, code, error.message);
    assert.equal(error.param, param, error.message);
    return error;
  }

  const orderUpdate = (extra: Partial<TemplateSendInput> = {}): TemplateSendInput => ({
    name: 'order_update',
    language: 'en_US',
    header: { type: 'text', text: 'A-9' },
    body: ['Ana', { type: 'currency', fallback: 'EUR 12.34', code: 'EUR', amount_1000: 12340 }, { type: 'date_time', fallback: 'Monday' }],
    buttons: [
      { index: 2, type: 'copy_code', code: 'SAVE10' },
      { index: 1, type: 'url', text: 'A-9' },
      { index: 0, type: 'quick_reply', payload: 'stop' },
    ],
    ...extra,
  });

  describe('accepted', () => {
    it('a positional template by name: every parameter in the port’s words, buttons in index order', async () => {
      const prepared = await prepare(orderUpdate());
      assert.deepEqual(prepared, {
        templateId: templates.order_update!.id,
        category: 'utility',
        content: {
          type: 'template',
          name: 'order_update',
          language: 'en_US',
          headerParameter: { type: 'text', text: 'A-9' },
          bodyParameters: [
            { type: 'text', text: 'Ana' },
            { type: 'currency', fallback: 'EUR 12.34', currencyCode: 'EUR', amount1000: 12340 },
            { type: 'date_time', fallback: 'Monday' },
          ],
          buttonParameters: [
            { type: 'quick_reply', index: 0, payload: 'stop' },
            { type: 'url', index: 1, urlSuffix: 'A-9' },
            { type: 'copy_code', index: 2, code: 'SAVE10' },
          ],
        },
      });
    });

    it('by id, the same; a quick reply payload may be left out', async () => {
      const {
        name: _,
        language: __,
        ...rest
      } = orderUpdate({
        buttons: [
          { index: 1, type: 'url', text: 'A-9' },
          { index: 2, type: 'copy_code', code: 'X' },
        ],
      });
      const prepared = await prepare({ id: templates.order_update!.id, ...rest });
      assert.equal(prepared.templateId, templates.order_update!.id);
      assert.deepEqual(
        prepared.content.buttonParameters?.map((button) => button.index),
        [1, 2],
      );
    });

    it('a named template, body as an object or as named parameters in any order; the header gets its name', async () => {
      const expected = [
        { type: 'text', text: 'Ana', name: 'first_name' },
        { type: 'text', text: '12 EUR', name: 'amount' },
        { type: 'text', text: 'Friday', name: 'due' },
      ];
      const header = { type: 'text', text: 'Ana' } as const;
      const asObject = await prepare({ name: 'welcome_named', language: 'en_US', header, body: { due: 'Friday', first_name: 'Ana', amount: '12 EUR' } });
      assert.deepEqual(asObject.content.bodyParameters, expected);
      assert.deepEqual(asObject.content.headerParameter, { type: 'text', text: 'Ana', name: 'first_name' });
      assert.equal(asObject.category, 'marketing');
      const asArray = await prepare({
        name: 'welcome_named',
        language: 'en_US',
        header,
        body: [
          { type: 'text', text: 'Friday', name: 'due' },
          { type: 'text', text: 'Ana', name: 'first_name' },
          { type: 'text', text: '12 EUR', name: 'amount' },
        ],
      });
      assert.deepEqual(asArray.content.bodyParameters, expected);
    });

    it('media headers by our id or by link, a document with its filename; a location header', async () => {
      const byId = await prepare({
        name: 'invoice_doc',
        language: 'en_US',
        header: { type: 'document', media_id: 'med_01JZ8Q6W3M4T2V9X0B7C5D1E2F', filename: 'invoice.pdf' },
      });
      assert.deepEqual(byId.content, {
        type: 'template',
        name: 'invoice_doc',
        language: 'en_US',
        headerParameter: { type: 'document', media: { mediaId: 'med_01JZ8Q6W3M4T2V9X0B7C5D1E2F' }, filename: 'invoice.pdf' },
      });
      const byLink = await prepare({ name: 'promo_image', language: 'en_US', header: { type: 'image', link: 'https://example.com/a.png' } });
      assert.deepEqual(byLink.content.headerParameter, { type: 'image', media: { link: 'https://example.com/a.png' } });
      const place = await prepare({
        name: 'store_location',
        language: 'en_US',
        header: { type: 'location', latitude: 51.5, longitude: -0.12, name: 'Shop' },
        body: ['the mall'],
      });
      assert.deepEqual(place.content.headerParameter, { type: 'location', latitude: 51.5, longitude: -0.12, name: 'Shop' });
    });

    it('a template without placeholders takes no parameters at all', async () => {
      assert.deepEqual((await prepare({ name: 'static_hello', language: 'en_US' })).content, { type: 'template', name: 'static_hello', language: 'en_US' });
      assert.deepEqual((await prepare({ name: 'static_hello', language: 'en_US', body: [] })).content, {
        type: 'template',
        name: 'static_hello',
        language: 'en_US',
      });
    });

    it('listApproved names the approved templates of the connection only, by name', async () => {
      const approved = await server.app.services.templates.listApproved(server.app.store.db, connection.id);
      assert.deepEqual(
        approved.map((template) => template.name),
        ['invoice_doc', 'order_update', 'plain_body', 'promo_image', 'static_hello', 'store_location', 'welcome_named'],
      );
      assert.deepEqual(
        approved.find((template) => template.name === 'order_update'),
        { id: templates.order_update!.id, name: 'order_update', language: 'en_US', category: 'utility' },
      );
    });
  });

  describe('how the template is named', () => {
    it('both id and name, or neither, or name without language: validation_failed', async () => {
      await refused({ id: templates.order_update!.id, name: 'order_update' }, 'validation_failed', '/template/name');
      await refused({ id: templates.order_update!.id, language: 'en_US' }, 'validation_failed', '/template/language');
      await refused({}, 'validation_failed', '/template/id');
      await refused({ name: 'order_update' }, 'validation_failed', '/template/language');
      await refused({ language: 'en_US' }, 'validation_failed', '/template/name');
    });

    it('an unknown name or language, or an id of another connection or organization: 404 resource_not_found', async () => {
      await refused({ name: 'no_such_template', language: 'en_US' }, 'resource_not_found', '/template/name');
      await refused({ ...orderUpdate(), language: 'pt_BR' }, 'resource_not_found', '/template/name');
      await refused({ name: 'elsewhere', language: 'en_US' }, 'resource_not_found', '/template/name');
      await refused({ id: templates.elsewhere!.id }, 'resource_not_found', '/template/id');
      await refused({ id: 'tpl_01JZ8Q6W3M4T2V9X0B7C5D1E2F' }, 'resource_not_found', '/template/id');
      const error = await server.app.services.templates
        .prepareSend(server.app.store.db, { organizationId: 'org_01JZ8Q6W3M4T2V9X0B7C5D1E2F', connectionId: connection.id }, { id: templates.order_update!.id })
        .then(
          () => undefined,
          (caught: unknown) => caught as AppError,
        );
      assert.equal(error?.code, 'resource_not_found');
    });

    it('a template that is not approved: 409 template_not_approved naming its status', async () => {
      const error = await refused({ name: 'awaiting', language: 'en_US' }, 'template_not_approved', '/template/name');
      assert.match(error.message, /pending/);
      await refused({ id: templates.awaiting!.id }, 'template_not_approved', '/template/id');
    });

    it('the pointer starts where the caller says the template sits', async () => {
      await refused({ name: 'no_such_template', language: 'en_US' }, 'resource_not_found', '/messages/3/template/name', '/messages/3/template');
      await refused(orderUpdate({ body: ['Ana'] }), 'template_parameters_mismatch', '/messages/3/template/body', '/messages/3/template');
    });
  });

  describe('header', () => {
    it('missing where the template has a placeholder or media', async () => {
      await refused(orderUpdate({ header: undefined }), 'template_parameters_mismatch', '/template/header');
      await refused({ name: 'invoice_doc', language: 'en_US' }, 'template_parameters_mismatch', '/template/header');
    });

    it('of the wrong type', async () => {
      await refused(orderUpdate({ header: { type: 'image', link: 'https://example.com/a.png' } }), 'template_parameters_mismatch', '/template/header');
      await refused(
        { name: 'invoice_doc', language: 'en_US', header: { type: 'video', media_id: 'med_01JZ8Q6W3M4T2V9X0B7C5D1E2F' } },
        'template_parameters_mismatch',
        '/template/header',
      );
      await refused(
        { name: 'store_location', language: 'en_US', header: { type: 'text', text: 'x' }, body: ['x'] },
        'template_parameters_mismatch',
        '/template/header',
      );
    });

    it('given where the template has none, or a fixed text', async () => {
      await refused({ name: 'static_hello', language: 'en_US', header: { type: 'text', text: 'x' } }, 'template_parameters_mismatch', '/template/header');
      await refused({ name: 'plain_body', language: 'en_US', header: { type: 'text', text: 'x' } }, 'template_parameters_mismatch', '/template/header');
    });

    it('media named both ways or neither, and a filename on anything but a document: validation_failed', async () => {
      await refused({ name: 'promo_image', language: 'en_US', header: { type: 'image' } }, 'validation_failed', '/template/header');
      await refused(
        { name: 'promo_image', language: 'en_US', header: { type: 'image', link: 'https://example.com/a.png', media_id: 'med_01JZ8Q6W3M4T2V9X0B7C5D1E2F' } },
        'validation_failed',
        '/template/header',
      );
      await refused(
        { name: 'promo_image', language: 'en_US', header: { type: 'image', link: 'https://example.com/a.png', filename: 'a.png' } },
        'validation_failed',
        '/template/header/filename',
      );
    });
  });

  describe('body', () => {
    it('too few parameters point at the body, too many at the first extra one', async () => {
      await refused(orderUpdate({ body: ['Ana', 'x'] }), 'template_parameters_mismatch', '/template/body');
      await refused(orderUpdate({ body: undefined }), 'template_parameters_mismatch', '/template/body');
      await refused(orderUpdate({ body: ['a', 'b', 'c', 'd', 'e'] }), 'template_parameters_mismatch', '/template/body/3');
      await refused({ name: 'static_hello', language: 'en_US', body: ['x'] }, 'template_parameters_mismatch', '/template/body/0');
    });

    it('names given to a numbered template', async () => {
      await refused(orderUpdate({ body: { first: 'a' } }), 'template_parameters_mismatch', '/template/body');
      await refused(orderUpdate({ body: ['a', { type: 'text', text: 'b', name: 'order' }, 'c'] }), 'template_parameters_mismatch', '/template/body/1');
    });

    it('a named template: values without names, unknown, repeated or missing names', async () => {
      const named = (body: TemplateSendInput['body']): TemplateSendInput => ({
        name: 'welcome_named',
        language: 'en_US',
        header: { type: 'text', text: 'Ana' },
        body,
      });
      await refused(named(['Ana', '12 EUR', 'Friday']), 'template_parameters_mismatch', '/template/body/0');
      await refused(named({ first_name: 'Ana', amount: '1', due: 'x', nickname: 'A' }), 'template_parameters_mismatch', '/template/body/nickname');
      await refused(named({ first_name: 'Ana', amount: '1' }), 'template_parameters_mismatch', '/template/body');
      await refused(
        named([
          { type: 'text', text: 'Ana', name: 'first_name' },
          { type: 'text', text: 'x', name: 'nickname' },
        ]),
        'template_parameters_mismatch',
        '/template/body/1',
      );
      await refused(
        named([
          { type: 'text', text: 'Ana', name: 'first_name' },
          { type: 'text', text: 'Ana', name: 'first_name' },
        ]),
        'template_parameters_mismatch',
        '/template/body/1',
      );
      const missing = await refused(
        named([
          { type: 'text', text: 'Ana', name: 'first_name' },
          { type: 'text', text: '1', name: 'amount' },
        ]),
        'template_parameters_mismatch',
        '/template/body',
      );
      assert.match(missing.message, /\{\{due\}\}/);
    });
  });

  describe('buttons', () => {
    it('an index the template lacks, a wrong type, or an index given twice point at that parameter', async () => {
      await refused(orderUpdate({ buttons: [{ index: 5, type: 'quick_reply', payload: 'x' }] }), 'template_parameters_mismatch', '/template/buttons/0');
      await refused(
        orderUpdate({
          buttons: [
            { index: 1, type: 'url', text: 'A' },
            { index: 0, type: 'url', text: 'x' },
          ],
        }),
        'template_parameters_mismatch',
        '/template/buttons/1',
      );
      await refused(
        orderUpdate({
          buttons: [
            { index: 1, type: 'url', text: 'A' },
            { index: 2, type: 'copy_code', code: 'x' },
            { index: 1, type: 'url', text: 'B' },
          ],
        }),
        'template_parameters_mismatch',
        '/template/buttons/2',
      );
      await refused(
        { name: 'static_hello', language: 'en_US', buttons: [{ index: 0, type: 'quick_reply', payload: 'x' }] },
        'template_parameters_mismatch',
        '/template/buttons/0',
      );
    });

    it('a dynamic URL or a copy-code button without its parameter', async () => {
      const error = await refused(orderUpdate({ buttons: [{ index: 2, type: 'copy_code', code: 'x' }] }), 'template_parameters_mismatch', '/template/buttons');
      assert.match(error.message, /Button 1 \(url\)/);
      await refused(orderUpdate({ buttons: [{ index: 1, type: 'url', text: 'x' }] }), 'template_parameters_mismatch', '/template/buttons');
    });
  });

  describe('TemplateSendSchema, as a send route validates it', () => {
    const validate = validatorCompiler({ schema: TemplateSendSchema, httpPart: 'body', method: 'POST', url: '/v1/messages' }) as ((
      value: unknown,
    ) => boolean) & { errors?: { instancePath: string; keyword: string }[] };

    it('accepts every parameter kind', () => {
      assert.ok(validate(orderUpdate()), JSON.stringify(validate.errors));
      assert.ok(
        validate({ id: 'tpl_01JZ8Q6W3M4T2V9X0B7C5D1E2F', header: { type: 'location', latitude: 1, longitude: 2 }, body: { first_name: 'Ana' } }),
        JSON.stringify(validate.errors),
      );
      assert.ok(
        validate({ name: 'x', language: 'en', header: { type: 'document', media_id: 'med_01JZ8Q6W3M4T2V9X0B7C5D1E2F', filename: 'a.pdf' } }),
        JSON.stringify(validate.errors),
      );
    });

    it('refuses unknown fields, bad ids, links that are not https, and bad parameter names', () => {
      for (const bad of [
        { ...orderUpdate(), colour: 'blue' },
        { id: 'msg_01JZ8Q6W3M4T2V9X0B7C5D1E2F' },
        { name: 'x', language: 'en', header: { type: 'image', link: 'http://example.com/a.png' } },
        { name: 'x', language: 'en', header: { type: 'text', text: 'a', extra: 1 } },
        { name: 'x', language: 'en', body: { 'First Name': 'Ana' } },
        { name: 'x', language: 'en', body: [{ type: 'currency', fallback: 'x', code: 'eur', amount_1000: 1 }] },
        { name: 'x', language: 'en', buttons: [{ index: 10, type: 'quick_reply', payload: 'x' }] },
        { name: 'x', language: 'en', buttons: [{ index: 0, type: 'phone_number', text: 'x' }] },
      ]) {
        assert.equal(validate(bad), false, JSON.stringify(bad));
      }
    });
  });
});
