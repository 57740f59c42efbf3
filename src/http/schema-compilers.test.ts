import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from 'typebox';
import { startServer } from '../../test/harness.ts';
import { assertError } from '../../test/factories.ts';
import { createSchemaCompilers, nullableScalarsAsTypeLists } from './schema-compilers.ts';
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

describe('nullable scalars serialized as type lists', () => {
  const Row = Type.Object({
    at: Nullable(Timestamp),
    name: Nullable(Type.String()),
    count: Nullable(Type.Integer()),
    flag: Nullable(Type.Boolean()),
    nested: Nullable(Type.Object({ at: Nullable(Timestamp) })),
    list: Type.Array(Nullable(Type.String())),
  });

  it('turns anyOf [scalar, null] into a type list, and leaves a nullable object as it is', () => {
    const rewritten = nullableScalarsAsTypeLists(Row) as { properties: Record<string, Record<string, unknown>> };
    assert.deepEqual(rewritten.properties.at!.type, ['string', 'null']);
    assert.equal(rewritten.properties.at!.format, 'date-time');
    assert.deepEqual(rewritten.properties.count!.type, ['integer', 'null']);
    assert.deepEqual(rewritten.properties.flag!.type, ['boolean', 'null']);
    assert.ok(Array.isArray(rewritten.properties.nested!.anyOf), 'an object branch keeps its anyOf');
    assert.deepEqual((rewritten.properties.list!.items as Record<string, unknown>).type, ['string', 'null']);
  });

  it("a route's serializer writes nullable values as JSON does", () => {
    const serialize = createSchemaCompilers().serializerCompiler({ schema: Row, method: 'GET', url: '/rows', httpStatus: '200' });
    for (const row of [
      { at: '2026-01-01T00:00:00.000Z', name: 'Zoë "quoted" \u2028', count: 3, flag: true, nested: { at: null }, list: ['a', null] },
      { at: null, name: null, count: null, flag: null, nested: null, list: [] },
      { at: '2026-06-01T12:00:00.000Z', name: '', count: 0, flag: false, nested: { at: '2026-06-01T12:00:00.000Z' }, list: [null] },
    ]) {
      assert.equal(serialize(row), JSON.stringify(row));
    }
  });
});
