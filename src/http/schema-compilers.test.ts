import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from 'typebox';
import { startServer } from '../../test/harness.ts';
import { createRequire } from 'node:module';
import { assertError, createConnection, createKey, inbound, newCustomer, settle, startServerWithOwner } from '../../test/factories.ts';
import { ContactListSchema } from '../modules/contacts/contacts.schemas.ts';
import { ConversationListSchema } from '../modules/conversations/conversations.schemas.ts';
import { IdentitySchema } from '../modules/identity/identity.routes.ts';
import { MessageListSchema } from '../modules/messages/messages.schemas.ts';
import { createSchemaCompilers, serializerSchema } from './schema-compilers.ts';
import { Nullable, Timestamp } from './schemas.ts';
import { createHttpServer } from './server.ts';

// Route schemas compile on a route's first request (schema-compilers.ts); these tests stand in for
// the start-up that used to compile them all.
describe('route schemas compiled on first use', () => {
  it("every route's validators and response serializers compile", async (t) => {
    const server = await startServer(t);
    assert.doesNotThrow(() => server.app.server.compileSchemas());
  });

  it('a schema that cannot compile is found by compileSchemas, naming its route', async (t) => {
    const app = createHttpServer({ publicBaseUrl: 'http://localhost:3000', logLevel: 'silent', trustProxy: false });
    t.after(() => app.close());
    // Strict Ajv refuses a keyword it does not know.
    app.post('/broken', { schema: { body: { type: 'object', unknownKeyword: true } } }, () => ({ ok: true }));
    await app.ready();
    assert.throws(() => app.compileSchemas(), /POST \/broken body: strict mode: unknown keyword: "unknownKeyword"/);
  });

  it('the first request to a route validates and serializes as an eagerly compiled one did', async (t) => {
    const app = createHttpServer({ publicBaseUrl: 'http://localhost:3000', logLevel: 'silent', trustProxy: false });
    t.after(() => app.close());
    app.post(
      '/things',
      {
        schema: {
          body: Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
          response: { 201: Type.Object({ name: Type.String() }, { additionalProperties: false }) },
        },
      },
      // The extra field is dropped by the response serializer, as fast-json-stringify always did.
      async (request, reply) => reply.code(201).send(Object.assign({ secret: 'not in the schema' }, request.body)),
    );
    await app.ready();
    const refused = await app.inject({ method: 'POST', url: '/things', payload: { name: '', colour: 'blue' } });
    const body = refused.json<{ error: { code: string; details: { param: string; code: string }[] } }>();
    assert.equal(refused.statusCode, 400);
    assert.equal(body.error.code, 'validation_failed');
    assert.deepEqual(
      body.error.details.map((detail) => `${detail.param} ${detail.code}`),
      ['/colour unknown_field', '/name too_short'],
    );
    const created = await app.inject({ method: 'POST', url: '/things', payload: { name: 'a' } });
    assert.equal(created.statusCode, 201);
    assert.equal(created.body, '{"name":"a"}');
  });

  it('a route of the service refuses a bad body with the same envelope on its first request', async (t) => {
    const server = await startServer(t);
    const response = await server.request('POST', '/auth/signup', { body: { email: 'ada@example.com', colour: 'blue' } });
    const error = assertError(response, 400, 'validation_failed');
    assert.ok(error.details.some((detail: { param: string; code: string }) => detail.param === '/colour' && detail.code === 'unknown_field'));
  });
});

describe('nullable values and arrays of enums serialized as typed strings', () => {
  const Row = Type.Object({
    state: Type.Enum(['open', 'closed']),
    mode: Nullable(Type.Enum(['live', 'test'])),
    scopes: Type.Array(Type.Enum(['messages:read', 'messages:write'])),
    at: Nullable(Timestamp),
    name: Nullable(Type.String()),
    count: Nullable(Type.Integer()),
    flag: Nullable(Type.Boolean()),
    nested: Nullable(Type.Object({ at: Nullable(Timestamp) })),
    list: Type.Array(Nullable(Type.String())),
  });

  it('turns anyOf [X, null] into a type list, inside nullable objects too', () => {
    const rewritten = serializerSchema(Row) as { properties: Record<string, Record<string, unknown>> };
    assert.deepEqual(rewritten.properties.at!.type, ['string', 'null']);
    assert.equal(rewritten.properties.at!.format, 'date-time');
    assert.deepEqual(rewritten.properties.count!.type, ['integer', 'null']);
    assert.deepEqual(rewritten.properties.flag!.type, ['boolean', 'null']);
    const nested = rewritten.properties.nested!;
    assert.deepEqual(nested.type, ['object', 'null']);
    assert.equal(nested.anyOf, undefined);
    assert.deepEqual((nested.properties as Record<string, Record<string, unknown>>).at!.type, ['string', 'null']);
    assert.deepEqual((rewritten.properties.list!.items as Record<string, unknown>).type, ['string', 'null']);
  });

  it('types the strings of an array of an enum, and a nullable enum as a type list', () => {
    const rewritten = serializerSchema(Row) as { properties: Record<string, Record<string, unknown>> };
    assert.equal(rewritten.properties.state!.type, undefined, 'a single enum value is left as it is');
    assert.deepEqual(rewritten.properties.mode!.type, ['string', 'null']);
    assert.equal(rewritten.properties.mode!.anyOf, undefined);
    assert.equal((rewritten.properties.scopes!.items as Record<string, unknown>).type, 'string');
    assert.equal(
      (serializerSchema({ type: 'array', items: { enum: ['a', 1] } }) as { items: { type?: unknown } }).items.type,
      undefined,
      'a mixed enum keeps no type',
    );
  });

  it("a route's serializer writes nullable values as JSON does", () => {
    const serialize = createSchemaCompilers().serializerCompiler({ schema: Row, method: 'GET', url: '/rows', httpStatus: '200' });
    for (const row of [
      {
        state: 'open',
        mode: 'live',
        scopes: ['messages:read', 'messages:write'],
        at: '2026-01-01T00:00:00.000Z',
        name: 'Zoë "quoted" \u2028',
        count: 3,
        flag: true,
        nested: { at: null },
        list: ['a', null],
      },
      { state: 'closed', mode: null, scopes: [], at: null, name: null, count: null, flag: null, nested: null, list: [] },
      {
        state: 'open',
        mode: 'test',
        scopes: ['messages:write'],
        at: '2026-06-01T12:00:00.000Z',
        name: '',
        count: 0,
        flag: false,
        nested: { at: '2026-06-01T12:00:00.000Z' },
        list: [null],
      },
    ]) {
      assert.equal(serialize(row), JSON.stringify(row));
    }
  });
});

// fast-json-stringify as Fastify would build it from the untouched schema: the anyOf path.
const referenceSerializer = (schema: unknown) =>
  (createRequire(import.meta.resolve('fastify'))('fast-json-stringify') as (schema: unknown) => (data: unknown) => string)(schema);

describe('answers written from the rewritten schemas are the bytes the schemas as written give', () => {
  it('conversations with their contact and last message, messages with context, referral and error, contacts, the identity', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const connection = await createConnection(server, owner);
    const { key } = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
    const customer = newCustomer();
    const first = await inbound(server, connection, {
      from: customer,
      text: 'From the ad',
      referral: { source_url: 'https://example.com/ad', source_type: 'ad', source_id: '1234', headline: 'Spring sale' },
    });
    await inbound(server, connection, { from: customer, text: 'A reply', context: { message_id: first.provider_message_id } });
    await server.request('POST', '/sandbox/control/behaviour', { body: { fail_next: { code: 131009, details: 'Parameter value is not valid' } } });
    const sent = await server.request('POST', '/v1/messages', {
      token: key,
      headers: { 'idempotency-key': 'refused-1' },
      body: { connection_id: connection.id, contact_id: first.contact_id, type: 'text', text: { body: 'Refused' } },
    });
    assert.equal(sent.status, 201, sent.text);
    await settle(server);

    for (const [path, schema] of [
      ['/v1/conversations?expand=contact,last_message', ConversationListSchema],
      ['/v1/messages', MessageListSchema],
      ['/v1/contacts', ContactListSchema],
      ['/v1/identity', IdentitySchema],
    ] as const) {
      const response = await server.request('GET', path, { token: key });
      assert.equal(response.status, 200, response.text);
      assert.equal(referenceSerializer(schema)(JSON.parse(response.text)), response.text, path);
    }
    const messages = (await server.request('GET', '/v1/messages', { token: key })).body.data as { context: unknown; referral: unknown; error: unknown }[];
    assert.ok(
      messages.some((message) => message.context !== null),
      'a message with a context',
    );
    assert.ok(
      messages.some((message) => message.referral !== null),
      'a message with a referral',
    );
    assert.ok(
      messages.some((message) => message.error !== null),
      'a message with an error',
    );
  });
});
