import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { request } from 'undici';
import { ERROR_CODES, ERROR_TYPES } from '../lib/errors.ts';
import { startServer, suiteScope, type TestServer } from '../../test/harness.ts';
import { slowUpload } from '../../test/slow-upload.ts';
import { assertError, createConnection, signUp, type SignedUp, startServerWithOwner } from '../../test/factories.ts';

describe('HTTP conventions shared by every endpoint', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  describe('the error catalogue', () => {
    it('has exactly nine types and forty-seven codes, each code of a known type', () => {
      assert.equal(Object.keys(ERROR_TYPES).length, 9);
      assert.equal(Object.keys(ERROR_CODES).length, 47);
      for (const definition of Object.values(ERROR_CODES)) assert.ok(definition.type in ERROR_TYPES);
    });
  });

  describe('request ids', () => {
    it('every response carries X-Request-Id, and an error body repeats it', async () => {
      const ok = await server.request('GET', '/healthz');
      assert.match(ok.headers.get('x-request-id') ?? '', /^req_[0-9A-Z]{26}$/);
      const failed = await server.request('GET', '/v1/identity');
      assertError(failed, 401, 'credential_missing');
    });

    it('a request id sent by the client is not trusted', async () => {
      const response = await server.request('GET', '/healthz', { headers: { 'x-request-id': 'spoofed' } });
      assert.notEqual(response.headers.get('x-request-id'), 'spoofed');
    });
  });

  describe('unknown routes and methods', () => {
    it('a path that is not valid URL encoding is route_not_found saying why, with the request id and the rate-limit headers', async () => {
      for (const path of ['/v1/contacts/%zz', '/v1/contacts/%C0%AF', '/v1/cont%E0%A4acts', '/%']) {
        const response = await server.request('GET', path, { token: owner.token });
        const error = assertError(response, 404, 'route_not_found');
        assert.equal(response.headers.get('x-request-id'), error.request_id);
        assert.match(error.message, /percent-escape that does not decode/);
        assert.ok(response.headers.get('x-ratelimit-remaining'), `${path} is charged like every other request`);
      }
    });

    it('an id of any length reaches its route: too long is validation_failed on /path/id, never a bad URL', async () => {
      for (const length of [150, 10_000]) {
        const response = await server.request('GET', `/v1/connections/conn_${'0'.repeat(length)}`, { token: owner.token });
        const error = assertError(response, 400, 'validation_failed');
        assert.equal(error.param, '/path/id');
        assert.ok(response.headers.get('x-ratelimit-remaining'));
      }
      const anonymous = await server.request('GET', `/v1/connections/conn_${'0'.repeat(10_000)}`);
      assertError(anonymous, 401, 'credential_missing');
    });

    it('an unknown path is route_not_found in the envelope', async () => {
      assertError(await server.request('GET', '/v1/nothing-here'), 404, 'route_not_found');
    });

    it('a known path with the wrong method is method_not_allowed with Allow', async () => {
      const response = await server.request('DELETE', '/v1/identity', { token: owner.token });
      assertError(response, 405, 'method_not_allowed');
      assert.match(response.headers.get('allow') ?? '', /GET/);
    });

    it('a wrong method on a path with an id is still method_not_allowed', async () => {
      const response = await server.request('PUT', '/v1/connections/conn_01J00000000000000000000000', { token: owner.token, body: {} });
      assertError(response, 405, 'method_not_allowed');
      assert.match(response.headers.get('allow') ?? '', /PATCH/);
    });
  });

  describe('bodies', () => {
    const keyBody = { kind: 'organization', mode: 'live' };

    it('malformed JSON is malformed_json', async () => {
      const response = await server.request('POST', '/v1/api-keys', {
        token: owner.token,
        rawBody: '{"kind":',
        headers: { 'content-type': 'application/json' },
      });
      assertError(response, 400, 'malformed_json');
    });

    it('a body that is not JSON is unsupported_content_type', async () => {
      const response = await server.request('POST', '/v1/api-keys', {
        token: owner.token,
        rawBody: 'kind=organization',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assertError(response, 415, 'unsupported_content_type');
      const text = await server.request('POST', '/v1/api-keys', { token: owner.token, rawBody: 'hello', headers: { 'content-type': 'text/plain' } });
      assertError(text, 415, 'unsupported_content_type');
    });

    it('a NUL character (U+0000) in any string, key or query value is validation_failed on its field, on every store', async () => {
      const named = await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: '+447700900555', name: 'Ada\u0000' } });
      const error = assertError(named, 400, 'validation_failed');
      assert.equal(error.param, '/name');
      assert.equal(error.details[0].code, 'invalid_character');
      const keyed = await server.request('POST', '/v1/contacts', {
        token: owner.token,
        body: { phone_number: '+447700900555', metadata: { 'crm/\u0000id': 1 } },
      });
      assert.equal(assertError(keyed, 400, 'validation_failed').param, '/metadata/crm~1\u0000id');
      const deep = await server.request('POST', '/v1/contacts', {
        token: owner.token,
        body: { phone_number: '+447700900555', metadata: { list: ['ok', 'no\u0000'] } },
      });
      assert.equal(assertError(deep, 400, 'validation_failed').param, '/metadata/list/1');
      const queried = await server.request('GET', '/v1/events?action=%00', { token: owner.token });
      assert.equal(assertError(queried, 400, 'validation_failed').param, '/query/action');
      const contacts = await server.request('GET', '/v1/contacts?phone_number=%2B447700900555', { token: owner.token });
      assert.deepEqual(contacts.body.data, [], 'nothing was written');
    });

    it('a POST without a body schema takes nothing or {}; anything else is refused before it is read', async () => {
      const make = async () => (await server.request('POST', '/v1/api-keys', { token: owner.token, body: keyBody })).body.id as string;
      const withField = await server.request('POST', `/v1/api-keys/${await make()}/revoke`, { token: owner.token, body: { reason: 'leaked' } });
      const error = assertError(withField, 400, 'validation_failed');
      assert.equal(error.param, '/reason');
      assert.equal(error.details[0].code, 'unknown_field');
      const notAnObject = await server.request('POST', `/v1/api-keys/${await make()}/revoke`, { token: owner.token, body: [1] });
      assert.equal(assertError(notAnObject, 400, 'validation_failed').param, '/');
      assert.equal((await server.request('POST', `/v1/api-keys/${await make()}/revoke`, { token: owner.token, body: {} })).status, 200);
      assert.equal((await server.request('POST', `/v1/api-keys/${await make()}/revoke`, { token: owner.token })).status, 200);
    });

    it('a body nested 3,000 levels deep is validation_failed, with or without an Idempotency-Key, never a 500', async () => {
      const deep = '{"a":'.repeat(3000) + '1' + '}'.repeat(3000);
      const id = (await server.request('POST', '/v1/api-keys', { token: owner.token, body: keyBody })).body.id as string;
      for (const headers of [{}, { 'idempotency-key': 'deep-1' }] as Record<string, string>[]) {
        const bodiless = await server.request('POST', `/v1/api-keys/${id}/rotate`, {
          token: owner.token,
          rawBody: deep,
          headers: { 'content-type': 'application/json', ...headers },
        });
        assertError(bodiless, 400, 'validation_failed');
      }
      const inMetadata = await server.request('POST', '/v1/contacts', {
        token: owner.token,
        rawBody: `{"phone_number":"+447700900556","metadata":${deep}}`,
        headers: { 'content-type': 'application/json', 'idempotency-key': 'deep-2' },
      });
      const error = assertError(inMetadata, 400, 'validation_failed');
      assert.equal(error.param.split('/').length - 1, 32, 'the pointer stops where the nesting passed the limit');
    });

    it('a charset other than UTF-8 is unsupported_content_type, where it was read as UTF-8', async () => {
      const body = JSON.stringify(keyBody);
      for (const charset of ['utf-16', 'ISO-8859-1', '"utf-16le"']) {
        const response = await server.request('POST', '/v1/api-keys', {
          token: owner.token,
          rawBody: body,
          headers: { 'content-type': `application/json; charset=${charset}` },
        });
        assertError(response, 415, 'unsupported_content_type');
      }
      for (const charset of ['utf-8', 'UTF-8', 'utf8']) {
        const response = await server.request('POST', '/v1/api-keys', {
          token: owner.token,
          rawBody: body,
          headers: { 'content-type': `application/json; charset=${charset}` },
        });
        assert.equal(response.status, 201, response.text);
      }
    });

    it('a key given twice, or a __proto__ key, is validation_failed on its pointer, where the last copy won or it read as malformed', async () => {
      const post = (rawBody: string) =>
        server.request('POST', '/v1/api-keys', { token: owner.token, rawBody, headers: { 'content-type': 'application/json' } });
      const twice = assertError(await post('{"name":"a","scopes":["contacts:read"],"name":"b"}'), 400, 'validation_failed');
      assert.equal(twice.param, '/name');
      assert.equal(twice.details[0].code, 'duplicate');
      const proto = assertError(await post('{"name":"a","metadata":{"__proto__":{"x":1}}}'), 400, 'validation_failed');
      assert.equal(proto.param, '/metadata/__proto__');
      assert.match(proto.message, /prototype/);
      assertError(await post('{"name":'), 400, 'malformed_json');
    });

    it('an empty JSON body is malformed_json', async () => {
      const response = await server.request('POST', '/v1/api-keys', { token: owner.token, rawBody: '', headers: { 'content-type': 'application/json' } });
      assertError(response, 400, 'malformed_json');
    });

    it('a body over 1 MiB is body_too_large', async () => {
      const big = JSON.stringify({ ...keyBody, name: 'x'.repeat(1024 * 1024) });
      assertError(
        await server.request('POST', '/v1/api-keys', { token: owner.token, rawBody: big, headers: { 'content-type': 'application/json' } }),
        413,
        'body_too_large',
      );
    });

    it('a body over 1 MiB sent slowly is read to its end and answered 413, not reset under the upload', async () => {
      for (const declared of [true, false]) {
        const upload = slowUpload(2 * 1024 * 1024);
        const response = await request(`${server.url}/v1/contacts`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${owner.token}`,
            'content-type': 'application/json',
            ...(declared ? { 'content-length': String(2 * 1024 * 1024) } : {}),
          },
          body: upload.body,
        });
        const body = (await response.body.json()) as { error: { code: string } };
        assert.equal(response.statusCode, 413);
        assert.equal(body.error.code, 'body_too_large');
        assert.equal(upload.progress.sent, 2 * 1024 * 1024, 'the whole body was sent');
      }
    });

    it('an unknown field is rejected, not dropped', async () => {
      const error = assertError(
        await server.request('POST', '/v1/api-keys', { token: owner.token, body: { ...keyBody, admin: true } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/admin');
      assert.equal(error.details[0].code, 'unknown_field');
    });

    it('a JSON body is never coerced: a number is not turned into a string', async () => {
      const connection = await createConnection(server, owner);
      const error = assertError(
        await server.request('PATCH', `/v1/connections/${connection.id}`, { token: owner.token, body: { name: 5 } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/name');
    });

    it('metadata is the one open object: unknown keys inside it are kept', async () => {
      const connection = await createConnection(server, owner);
      const response = await server.request('PATCH', `/v1/connections/${connection.id}`, {
        token: owner.token,
        body: { metadata: { anything: { nested: [1, 2] }, crm_id: 'A-1' } },
      });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body.metadata, { anything: { nested: [1, 2] }, crm_id: 'A-1' });
    });

    it('fifteen invalid fields give ten details, the first one as param', async () => {
      const body: Record<string, unknown> = { kind: 'team', mode: 'staging' };
      for (let i = 0; i < 13; i++) body[`extra_${String(i).padStart(2, '0')}`] = i;
      const error = assertError(await server.request('POST', '/v1/api-keys', { token: owner.token, body }), 400, 'validation_failed');
      assert.equal(error.details.length, 10);
      assert.equal(error.param, error.details[0].param);
      for (const detail of error.details) {
        assert.equal(typeof detail.param, 'string');
        assert.equal(typeof detail.code, 'string');
        assert.equal(typeof detail.message, 'string');
      }
    });

    it('a nested invalid value is reported with its JSON pointer', async () => {
      const error = assertError(
        await server.request('POST', '/v1/api-keys', { token: owner.token, body: { ...keyBody, scopes: ['messages:read', 'root:everything'] } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/scopes/1');
    });

    it('SQL-looking and oversized strings are data, never code', async () => {
      const connection = await createConnection(server, owner);
      const name = "x'); DROP TABLE connections; --";
      const response = await server.request('PATCH', `/v1/connections/${connection.id}`, { token: owner.token, body: { name } });
      assert.equal(response.status, 200);
      assert.equal(response.body.name, name);
      assert.equal((await server.request('GET', '/v1/connections', { token: owner.token })).status, 200);
      const error = assertError(
        await server.request('PATCH', `/v1/connections/${connection.id}`, { token: owner.token, body: { name: 'n'.repeat(5000) } }),
        400,
        'validation_failed',
      );
      assert.equal(error.details[0].code, 'too_long');
    });
  });

  describe('query strings and path parameters', () => {
    it('query integers are coerced from text, and bad ones name /query/<param>', async () => {
      assert.equal((await server.request('GET', '/v1/members?limit=5', { token: owner.token })).status, 200);
      const error = assertError(await server.request('GET', '/v1/members?limit=abc', { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/limit');
    });

    it('an unknown query parameter is rejected', async () => {
      const error = assertError(await server.request('GET', '/v1/members?sort=email', { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/sort');
    });

    it('a malformed id in the path is validation_failed on /path/id', async () => {
      const error = assertError(await server.request('GET', '/v1/connections/not-an-id', { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/path/id');
    });
  });

  describe('internal failures', () => {
    it('an unexpected error is a masked 500 with the request id', async (t) => {
      // Pulling a table from under a live server (its own store) makes a handler fail unexpectedly.
      const broken = await startServer(t);
      const account = await signUp(broken);
      await sql`alter table organizations rename to organizations_gone`.execute(broken.app.store.db);
      const response = await broken.request('GET', '/v1/identity', { token: account.token });
      const error = assertError(response, 500, 'internal_error');
      assert.equal(error.message, 'An unexpected error occurred.');
      assert.doesNotMatch(response.text, /organizations|at .*\.ts:\d+/);
    });
  });
});
