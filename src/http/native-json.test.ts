import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import Type from 'typebox';
import { createConnection, inbound, newCustomer, settle, startServerWithOwner } from '../../test/factories.ts';
import { startServer } from '../../test/harness.ts';
import { firstDifference, registerNativeJsonSerializers } from './native-json.ts';
import { Nullable, Timestamp } from './schemas.ts';
import { createHttpServer } from './server.ts';

const Thing = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  created_at: Timestamp,
  note: Type.Optional(Type.String()),
});

/** A server with one opted-in route that answers whatever object the test hands it. */
async function serverAnswering(t: TestContext, check: boolean, answer: () => unknown) {
  const app = createHttpServer({ publicBaseUrl: 'http://localhost:3000', logLevel: 'silent', trustProxy: false });
  t.after(() => app.close());
  registerNativeJsonSerializers(app, { check });
  app.get('/thing', { config: { nativeJson: true }, schema: { response: { 200: Thing } } }, async () => answer() as never);
  await app.ready();
  return app;
}

describe('answers written by JSON.stringify (nativeJson routes)', () => {
  const inOrder = { id: 'a', name: 'q"uote \\ 中文 😀 \u2028 \ud800', created_at: '2026-06-01T12:00:00.000Z', note: 'optional, last' };

  it('writes the bytes the compiled serializer writes for an object built in its order', async (t) => {
    const app = await serverAnswering(t, true, () => inOrder);
    const answer = await app.inject({ method: 'GET', url: '/thing' });
    assert.equal(answer.statusCode, 200);
    assert.equal(answer.body, JSON.stringify(inOrder));
  });

  it('with the check on, an extra field or another order fails the request instead of answering', async (t) => {
    for (const wrong of [
      { ...inOrder, secret: 'a column the schema does not show' },
      { id: 'a', note: 'optional, first', name: null, created_at: '2026-06-01T12:00:00.000Z' },
    ]) {
      const app = await serverAnswering(t, true, () => wrong);
      const answer = await app.inject({ method: 'GET', url: '/thing' });
      assert.equal(answer.statusCode, 500, answer.body);
      assert.equal(answer.json<{ error: { type: string } }>().error.type, 'api_error');
      assert.doesNotMatch(answer.body, /secret|optional/);
    }
  });

  it('without the check, JSON.stringify writes the object as it is: the mapper alone decides what is shown', async (t) => {
    const extra = { ...inOrder, secret: 'shown' };
    const app = await serverAnswering(t, false, () => extra);
    assert.equal((await app.inject({ method: 'GET', url: '/thing' })).body, JSON.stringify(extra));
  });

  it('refuses a route that also brings a serializer compiler of its own', async (t) => {
    const app = createHttpServer({ publicBaseUrl: 'http://localhost:3000', logLevel: 'silent', trustProxy: false });
    t.after(() => app.close());
    registerNativeJsonSerializers(app, { check: false });
    assert.throws(
      () => app.get('/thing', { config: { nativeJson: true }, serializerCompiler: () => JSON.stringify, handler: async () => ({}) }),
      /GET \/thing: nativeJson and a serializer compiler of its own exclude each other/,
    );
  });

  it('names where the two serializations part', () => {
    assert.equal(
      firstDifference('{"id":"a","x":1}', '{"id":"a"}'),
      'JSON.stringify writes "{\\"id\\":\\"a\\",\\"x\\":1}" where the response schema\'s serializer writes "{\\"id\\":\\"a\\"}" (character 9)',
    );
  });

  it('the test suite runs with the check on, so every opted-in answer of every test is compared', async (t) => {
    const server = await startServer(t);
    assert.equal(server.config.verifyNativeJson, true);
  });

  it('a reply with its context, a failed message with its error and a page of conversations with both relations are written alike by both', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const connection = await createConnection(server, owner);
    const customer = newCustomer();
    const first = await inbound(server, connection, { from: customer, text: 'Hello "there" \\ 😀 \u2028' });
    await inbound(server, connection, { from: customer, text: 'again', context: { message_id: first.provider_message_id } });
    await server.request('POST', '/sandbox/control/behaviour', { body: { fail_next: { code: 131009, details: 'Parameter value is not valid' } } });
    const sent = await server.request('POST', '/v1/messages', {
      token: owner.token,
      headers: { 'idempotency-key': 'native-json-failed' },
      body: { connection_id: connection.id, contact_id: first.contact_id, type: 'text', text: { body: 'Refused' } },
    });
    assert.equal(sent.status, 201, sent.text);
    await settle(server);

    // The check is on: each 200 is the two serializers agreeing, byte for byte.
    const messages = await server.request('GET', '/v1/messages?limit=100', { token: owner.token });
    assert.equal(messages.status, 200, messages.text);
    const listed = messages.body.data as { id: string; status: string; error: unknown; context: unknown }[];
    assert.ok(listed.some((message) => message.status === 'failed' && message.error !== null));
    assert.ok(listed.some((message) => message.context !== null));
    for (const path of [
      `/v1/messages/${sent.body.id}`,
      '/v1/conversations?expand=contact,last_message',
      `/v1/conversations/${first.conversation_id}?expand=contact,last_message`,
      '/v1/contacts',
      `/v1/contacts/${first.contact_id}`,
    ]) {
      const answer = await server.request('GET', path, { token: owner.token });
      assert.equal(answer.status, 200, `${path}: ${answer.text}`);
    }
  });
});
