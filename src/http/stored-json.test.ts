import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import Type from 'typebox';
import { StoredJson } from '../lib/stored-json.ts';
import { AuditEventListSchema } from '../modules/audit-events/audit-events.schemas.ts';
import { createConnection, type SignedUp, startServerWithOwner } from '../../test/factories.ts';
import { suiteScope, type TestServer } from '../../test/harness.ts';
import { Nullable, StoredJsonOf } from './schemas.ts';
import { compileStoredJsonSerializer } from './stored-json.ts';

/** Text that JSON escapes, or that an escaper gets wrong: quotes, backslashes, controls, line separators, astral and lone surrogates. */
const AWKWARD = 'q"uote \\ back/slash \n\t\u0000\u001f é ü 中文 😀 \u2028\u2029 \ud800 lone \udfff </script>';

describe('stored JSON spliced into answers', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  /** Fastify's own compiled serializer (fast-json-stringify), what answers went through before the splice. */
  const fastJsonStringify = (schema: object) => {
    const compile = server.app.server.serializerCompiler;
    assert.ok(compile);
    return compile({ schema, method: 'GET', url: '/', httpStatus: '200' });
  };

  it('the events list is byte for byte what parsing each entry and serializing it again writes', async () => {
    const connection = await createConnection(server, owner);
    // PostgreSQL's text columns refuse NUL (the name is also stored in the connection's row).
    const awkwardName = AWKWARD.replace('\u0000', '');
    for (const name of [awkwardName, 'plain', '{"looks":"like json"}', '-']) {
      const renamed = await server.request('PATCH', `/v1/connections/${connection.id}`, { token: owner.token, body: { name } });
      assert.equal(renamed.status, 200, renamed.text);
    }
    await server.request('POST', '/v1/api-keys', { token: owner.token, body: { kind: 'organization', mode: 'live', metadata: { note: AWKWARD } } });

    const page = await server.request('GET', '/v1/events?limit=100', { token: owner.token });
    assert.equal(page.status, 200);
    const parsed = JSON.parse(page.text) as { data: { action: string; data: Record<string, unknown> }[] };
    assert.deepEqual(
      parsed.data.filter((event) => event.action === 'connection.updated').map((event) => event.data.name),
      ['-', '{"looks":"like json"}', 'plain', awkwardName],
    );
    assert.equal(page.text, fastJsonStringify(AuditEventListSchema)(parsed));

    const one = await server.request('GET', `/v1/events/${(parsed.data[3] as unknown as { id: string }).id}`, { token: owner.token });
    assert.equal(one.text, JSON.stringify(parsed.data[3]));
  });

  it('the events routes splice (a key with a line break, which a parse and fast-json-stringify would drop, arrives)', async () => {
    const data = { 'two\nlines': AWKWARD };
    await server.app.store.db
      .transaction()
      .execute((trx) =>
        server.app.services.audit.record(
          trx,
          { system: true, organizationId: owner.organizationId },
          { action: 'test.spliced', target: { type: 'test', id: 'one' }, data },
        ),
      );
    const page = await server.request('GET', '/v1/events?action=test.spliced', { token: owner.token });
    assert.deepEqual(page.body.data[0].data, data);
    const one = await server.request('GET', `/v1/events/${page.body.data[0].id}`, { token: owner.token });
    assert.deepEqual(one.body.data, data);
  });

  it('the splice writes what fast-json-stringify writes for the parsed value, whatever the value', () => {
    const Item = Type.Object({
      id: Type.String(),
      data: StoredJsonOf(Type.Record(Type.String(), Type.Unknown())),
      note: Nullable(Type.String()),
      extra: StoredJsonOf(Type.Array(Type.Unknown())),
    });
    const Page = Type.Object({ object: Type.Literal('list'), data: Type.Array(Item), has_more: Type.Boolean() });
    const values: unknown[] = [
      {},
      // Keys without line terminators: fast-json-stringify's record pattern (`^.*$`) drops the others (below).
      { text: AWKWARD, [AWKWARD.replace(/[\n\u2028\u2029]/g, '')]: 'key too' },
      { 2: 'integer keys first', b: 1, 1: 'and in order', a: [1, -0, 1e21, 0.1, -5e-7, null, true, false, { nested: { deeper: [AWKWARD] } }] },
      { empty: '', list: [], object: {} },
    ];
    const items = values.map((value, index) => ({ id: `item_${index}`, data: value, note: index % 2 ? null : AWKWARD, extra: [value, index] }));
    const stored = items.map((item) => ({ ...item, data: new StoredJson(JSON.stringify(item.data)), extra: new StoredJson(JSON.stringify(item.extra)) }));
    const reparsed = stored.map((item) => ({ ...item, data: JSON.parse(item.data.text) as unknown, extra: JSON.parse(item.extra.text) as unknown }));

    const splice = compileStoredJsonSerializer(Page, (schema) => fastJsonStringify(schema));
    const spliced = splice({ object: 'list', data: stored, has_more: false });
    assert.equal(spliced, fastJsonStringify(Page)({ object: 'list', data: reparsed, has_more: false }));
    assert.equal(spliced, JSON.stringify({ object: 'list', data: items, has_more: false }));
    assert.equal(splice({ object: 'list', data: [], has_more: true }), '{"object":"list","data":[],"has_more":true}');
  });

  it('the splice keeps a key with a line break, which fast-json-stringify’s record pattern would drop', () => {
    const Entry = Type.Object({ data: StoredJsonOf(Type.Record(Type.String(), Type.Unknown())) });
    const value = { 'two\nlines': 1, one: 2 };
    const spliced = compileStoredJsonSerializer(Entry, (schema) => fastJsonStringify(schema))({ data: new StoredJson(JSON.stringify(value)) });
    assert.equal(spliced, JSON.stringify({ data: value }));
    assert.equal(fastJsonStringify(Entry)({ data: value }), '{"data":{"one":2}}');
  });

  it('a StoredJson serialized without the splice still writes the parsed value', () => {
    const value = { text: AWKWARD, n: [1, 2] };
    assert.equal(JSON.stringify({ data: new StoredJson(JSON.stringify(value)) }), JSON.stringify({ data: value }));
    assert.equal(
      fastJsonStringify(Type.Object({ data: Type.Record(Type.String(), Type.Unknown()) }))({ data: new StoredJson(JSON.stringify(value)) }),
      JSON.stringify({ data: value }),
    );
  });

  it('a schema holding stored JSON where the splice cannot place it is refused when compiled', () => {
    const Optional = Type.Object({ data: Type.Optional(StoredJsonOf(Type.Record(Type.String(), Type.Unknown()))) });
    assert.throws(() => compileStoredJsonSerializer(Optional, () => () => ''), /stored JSON is supported/);
  });
});
