import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import Type from 'typebox';
import { DAY, SECOND } from '../../lib/clock.ts';
import { OAUTH_FORBIDDEN_SCOPES, SCOPES, type Scope } from '../credentials/scopes.schemas.ts';
import { createToolCalls, ToolCallFailure } from './mcp-tool-calls.ts';
import { createTools, type ToolAnnotations, type ToolDefinition } from './mcp-tools.ts';
import { answerMcp } from './mcp-transport.ts';
import { suiteScope, type Scope as TestScope, type TestServer } from '../../../test/harness.ts';
import {
  addMember,
  assertError,
  createConnection,
  createKey,
  defineTemplate,
  inbound,
  newCustomer,
  settle,
  signUp,
  startServerWithOwner,
  type SignedUp,
} from '../../../test/factories.ts';

const OAUTH_SCOPES = SCOPES.filter((scope) => !OAUTH_FORBIDDEN_SCOPES.includes(scope));
const idempotencyKey = () => `key-${randomBytes(8).toString('hex')}`;

type ToolResult = { isError?: boolean; structuredContent?: any; content: { type: string; text: string }[]; _meta?: Record<string, unknown> };

/** An access token as the authorization server issues one after consent; `resource` defaults to the tool server. */
async function mintToken(
  server: TestServer,
  organizationId: string,
  scopes: readonly Scope[] = OAUTH_SCOPES,
  resource: string | null = `${server.config.publicBaseUrl}/mcp`,
) {
  return server.app.store.db
    .transaction()
    .execute((trx) => server.app.services.oauthTokens.issue(trx, { organizationId, clientName: 'Test agent', scopes, ttlMs: 2 * DAY, resource }));
}

/** The SDK's own client over Streamable HTTP, holding `token`; closed when `scope` ends. */
async function connect(scope: TestScope, server: TestServer, token: string): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  scope.after(() => client.close());
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** A successful call's result; fails with the error envelope otherwise. */
async function result(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const answer = await call(client, name, args);
  assert.notEqual(answer.isError, true, answer.content[0]?.text);
  assert.deepEqual(JSON.parse(answer.content[0]!.text), answer.structuredContent, 'the text content is the structured content as JSON');
  return answer.structuredContent;
}

/** A tool error's envelope, checked like assertError checks a response's. */
async function toolError(client: Client, name: string, args: Record<string, unknown>, code: string): Promise<any> {
  const answer = await call(client, name, args);
  assert.equal(answer.isError, true, answer.content[0]?.text);
  const error = answer.structuredContent.error;
  assert.equal(error.code, code, answer.content[0]?.text);
  assert.equal(typeof error.type, 'string');
  assert.equal(typeof error.message, 'string');
  assert.ok('param' in error);
  assert.match(error.doc_url, new RegExp(`/docs/errors/${code}$`));
  assert.match(error.request_id, /^req_/);
  return error;
}

/** A raw JSON-RPC POST to /mcp, for what the SDK's client would not send or hides (headers). */
function post(server: TestServer, token: string | undefined, body: unknown) {
  return server.request('POST', '/mcp', {
    ...(token ? { token } : {}),
    body,
    headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
  });
}

const listTools = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };

describe('the tool server (MCP)', () => {
  let server: TestServer;
  let owner: SignedUp;
  let line: { id: string; phone_number_id: string };
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    line = await createConnection(server, owner);
  });

  const rest = async (path: string) => {
    const response = await server.request('GET', path, { token: owner.token });
    assert.equal(response.status, 200, response.text);
    return response.body;
  };

  describe('tools/list', () => {
    it('shows every tool to a token holding every scope an OAuth token may, each with its annotations and a strict input schema', async (t) => {
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), [
        'add_note',
        'assign_conversation',
        'get_contact',
        'get_conversation_context',
        'get_identity',
        'get_message',
        'get_usage',
        'list_connections',
        'list_conversations',
        'list_templates',
        'mark_read',
        'record_consent',
        'search_contacts',
        'send_message',
        'send_notification',
        'send_template',
        'tag_conversation',
        'upsert_contact',
      ]);
      for (const tool of tools) {
        assert.equal(tool.inputSchema.type, 'object');
        assert.equal((tool.inputSchema as { additionalProperties?: unknown }).additionalProperties, false, `${tool.name} refuses unknown arguments`);
        assert.equal(typeof tool.annotations?.readOnlyHint, 'boolean', tool.name);
        assert.equal(typeof tool.annotations?.destructiveHint, 'boolean', tool.name);
        assert.equal(typeof tool.annotations?.idempotentHint, 'boolean', tool.name);
        assert.equal(typeof tool.annotations?.openWorldHint, 'boolean', tool.name);
      }
      const send = tools.find((tool) => tool.name === 'send_message')!;
      assert.deepEqual(send.annotations, { title: 'Send a message', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true });
      assert.ok(send.inputSchema.properties?.idempotency_key, 'sends take an idempotency key');
      assert.equal(tools.find((tool) => tool.name === 'get_contact')!.annotations?.readOnlyHint, true);
    });

    it('docs/mcp.md lists every tool in catalogue order with its scope and annotations', () => {
      const cell = (hints: ToolAnnotations) => {
        if (hints.readOnlyHint) return 'read-only';
        const words = [hints.destructiveHint && 'destructive', hints.idempotentHint && 'idempotent', hints.openWorldHint && 'open world'].filter(Boolean);
        return words.length === 0 ? 'additive' : words.join(', ');
      };
      const documented = readFileSync(new URL('../../../docs/mcp.md', import.meta.url), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('| `'))
        .map((line) => line.split(' | ').map((part) => part.replace(/^\| /, '').replace(/ \|$/, '')))
        .filter((cells) => cells.length === 4)
        .map(([name, scope, , annotations]) => ({ name, scope, annotations }));
      const catalogue = createTools(server.app.services).map((tool) => ({
        name: `\`${tool.name}\``,
        scope: tool.scope === null ? 'none' : `\`${tool.scope}\``,
        annotations: cell(tool.annotations),
      }));
      assert.deepEqual(documented, catalogue);
    });

    it('shows only the tools the token’s scopes allow', async (t) => {
      const client = await connect(t, server, (await mintToken(server, owner.organizationId, ['messages:read'])).token);
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), ['get_conversation_context', 'get_identity', 'get_message', 'list_conversations']);
    });
  });

  describe('read tools', () => {
    it('get_identity names the organization, the token and its scopes', async (t) => {
      const token = await mintToken(server, owner.organizationId, ['messages:read', 'contacts:read']);
      const identity = await result(await connect(t, server, token.token), 'get_identity');
      assert.equal(identity.organization.id, owner.organizationId);
      assert.deepEqual(identity.credential, { kind: 'oauth_token', id: token.id });
      assert.deepEqual(identity.scopes, ['messages:read', 'contacts:read']);
      assert.equal(identity.member, null);
    });

    it('list_conversations, get_conversation_context, get_contact, search_contacts and get_message answer what /v1 answers', async (t) => {
      const customer = newCustomer();
      const message = await inbound(server, line, { from: customer, text: 'Where is my order?' });
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);

      const conversations = await result(client, 'list_conversations', { contact_id: message.contact_id });
      assert.equal(conversations.object, 'list');
      assert.equal(conversations.data.length, 1);
      const [conversation] = conversations.data;
      assert.equal(conversation.id, message.conversation_id);
      assert.equal(conversation.contact.phone_number, `+${customer}`, 'the contact is embedded');
      assert.equal(conversation.last_message.id, message.id, 'and the last message');

      const context = await result(client, 'get_conversation_context', { conversation_id: message.conversation_id });
      assert.equal(context.object, 'conversation_context');
      assert.deepEqual(context.conversation, await rest(`/v1/conversations/${message.conversation_id}`));
      assert.deepEqual(context.contact, await rest(`/v1/contacts/${message.contact_id}`));
      assert.equal(context.window.open, true);
      assert.equal(context.window.connection_id, line.id);
      assert.deepEqual(
        context.messages.map((m: { id: string }) => m.id),
        [message.id],
      );
      assert.equal(context.has_earlier_messages, false);

      assert.deepEqual(await result(client, 'get_contact', { contact_id: message.contact_id }), await rest(`/v1/contacts/${message.contact_id}`));
      assert.deepEqual(await result(client, 'get_message', { message_id: message.id }), await rest(`/v1/messages/${message.id}`));
      const found = await result(client, 'search_contacts', { phone_number: `+${customer}` });
      assert.deepEqual(
        found.data.map((contact: { id: string }) => contact.id),
        [message.contact_id],
      );
    });

    it('list_connections, get_usage and list_templates (with the parameters each template takes)', async (t) => {
      await defineTemplate(server, owner.token, line, {
        name: `order_ready_${randomBytes(3).toString('hex')}`,
        category: 'utility',
        text: 'Hi {{1}}, order {{2}} is ready.',
        examples: ['Ana', '42'],
      });
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);
      const connections = await result(client, 'list_connections');
      assert.ok(connections.data.some((connection: { id: string }) => connection.id === line.id));
      const usage = await result(client, 'get_usage');
      assert.equal(usage.object, 'usage');
      const templates = await result(client, 'list_templates', { connection_id: line.id, status: 'approved' });
      const template = templates.data[0];
      assert.ok(template, 'the approved template is listed');
      assert.deepEqual(template.parameter_slots, { format: 'positional', header: null, body: ['1', '2'], buttons: [] });
    });
  });

  describe('sending', () => {
    it('send_message queues a text that reaches the provider through the queue, as POST /v1/messages does', async (t) => {
      const customer = newCustomer();
      const received = await inbound(server, line, { from: customer });
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);
      const message = await result(client, 'send_message', {
        connection_id: line.id,
        contact_id: received.contact_id,
        type: 'text',
        text: { body: 'It ships today.' },
        idempotency_key: idempotencyKey(),
      });
      assert.match(message.id, /^msg_/);
      assert.equal(message.status, 'queued');
      assert.equal(message.conversation_id, received.conversation_id);
      await settle(server);
      const sent = await result(client, 'get_message', { message_id: message.id });
      assert.equal(sent.status, 'read');
      assert.equal((await server.app.sandbox!.state.findMessage(sent.provider_message_id))?.waId, customer, 'the sandbox received it');
    });

    it('the same send twice with one idempotency key sends one message and answers the first result again', async (t) => {
      const customer = newCustomer();
      const received = await inbound(server, line, { from: customer });
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);
      const args = { connection_id: line.id, contact_id: received.contact_id, type: 'text', text: { body: 'Once only.' }, idempotency_key: idempotencyKey() };
      const first = await call(client, 'send_message', args);
      const second = await call(client, 'send_message', args);
      assert.notEqual(first.isError, true, first.content[0]?.text);
      assert.deepEqual(second.structuredContent, first.structuredContent);
      assert.deepEqual(second._meta, { idempotency_replayed: true });
      await settle(server);
      assert.equal((await server.app.sandbox!.state.outboundTo(customer)).length, 1, 'the provider received it once');

      const reuse = await toolError(client, 'send_message', { ...args, text: { body: 'Something else.' } }, 'idempotency_key_reuse');
      assert.equal(reuse.param, '/idempotency_key');
    });

    it('a free-form send outside the window is window_closed, listing the approved templates', async (t) => {
      const name = `welcome_${randomBytes(3).toString('hex')}`;
      await defineTemplate(server, owner.token, line, { name, category: 'utility', text: 'Welcome, {{1}}!', examples: ['Ana'] });
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);
      const error = await toolError(
        client,
        'send_message',
        { connection_id: line.id, to: `+${newCustomer()}`, type: 'text', text: { body: 'Hello?' }, idempotency_key: idempotencyKey() },
        'window_closed',
      );
      assert.ok(
        error.templates.some((template: { name: string }) => template.name === name),
        'the approved templates come with the error',
      );

      const customer = newCustomer();
      const message = await result(client, 'send_template', {
        connection_id: line.id,
        to: `+${customer}`,
        template: { name, language: 'en_US', body: ['Ana'] },
        idempotency_key: idempotencyKey(),
      });
      assert.equal(message.type, 'template');
      await settle(server);
      assert.equal((await server.app.sandbox!.state.outboundTo(customer)).length, 1);
    });

    it('send_notification schedules a template notification, once per idempotency key', async (t) => {
      const name = `reminder_${randomBytes(3).toString('hex')}`;
      await defineTemplate(server, owner.token, line, { name, category: 'utility', text: 'Your visit is at {{1}}.', examples: ['10:00'] });
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);
      const args = {
        connection_id: line.id,
        to: `+${newCustomer()}`,
        template: { name, language: 'en_US', parameters: { body: ['10:00'] } },
        idempotency_key: idempotencyKey(),
      };
      const notification = await result(client, 'send_notification', args);
      assert.match(notification.id, /^ntf_/);
      const again = await call(client, 'send_notification', args);
      assert.equal(again.structuredContent.id, notification.id);
      assert.deepEqual(again._meta, { idempotency_replayed: true });
    });
  });

  describe('write tools', () => {
    it('tag, assign, note, upsert a contact, record consent and mark read, as the REST routes do', async (t) => {
      const customer = newCustomer();
      const received = await inbound(server, line, { from: customer });
      const agent = await addMember(server, owner.organizationId, 'agent');
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);

      const tagged = await result(client, 'tag_conversation', { conversation_id: received.conversation_id, tags: ['vip', 'order'] });
      assert.deepEqual(tagged.tags, ['order', 'vip']);
      const assigned = await result(client, 'assign_conversation', { conversation_id: received.conversation_id, member_id: agent.memberId });
      assert.equal(assigned.assignee_id, agent.memberId);
      const note = await result(client, 'add_note', { conversation_id: received.conversation_id, body: 'Asked about order 42.' });
      assert.equal(note.object, 'note');
      assert.equal(note.author.credential_kind, 'oauth_token');
      const notes = await rest(`/v1/conversations/${received.conversation_id}/notes`);
      assert.deepEqual(
        notes.data.map((n: { id: string }) => n.id),
        [note.id],
      );

      const updated = await result(client, 'upsert_contact', { phone_number: `+${customer}`, name: 'Ana', metadata: { tier: 'gold' } });
      assert.equal(updated.id, received.contact_id, 'the contact with that number is updated');
      assert.equal(updated.name, 'Ana');
      const other = `+${newCustomer()}`;
      const created = await result(client, 'upsert_contact', { phone_number: other, name: 'Bo' });
      assert.notEqual(created.id, received.contact_id);
      assert.equal((await result(client, 'upsert_contact', { phone_number: other, email: 'bo@example.com' })).id, created.id, 'and once it exists, updated');

      const consented = await result(client, 'record_consent', { contact_id: received.contact_id, status: 'opted_out', source: 'agent' });
      assert.equal(consented.consent.marketing.status, 'opted_out');

      const read = await result(client, 'mark_read', { message_id: received.id });
      assert.equal(read.id, received.id);
    });
  });

  describe('errors as tool results', () => {
    it('a tool called without its scope is scope_missing, naming the scope', async (t) => {
      const client = await connect(t, server, (await mintToken(server, owner.organizationId, ['messages:read'])).token);
      const error = await toolError(
        client,
        'send_message',
        { connection_id: line.id, to: '+4477009000000', type: 'text', text: { body: 'x' } },
        'scope_missing',
      );
      assert.equal(error.required_scope, 'messages:write');
      assert.equal(error.type, 'permission_error');
    });

    it('bad arguments are validation_failed on the argument’s pointer, as a body field would be', async (t) => {
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);
      assert.equal((await toolError(client, 'get_contact', { contact_id: 'nope' }, 'validation_failed')).param, '/contact_id');
      const unknown = await toolError(client, 'get_contact', { contact_id: 'ct_01JZ8Q6W3M4T2V9X0B7C5D1E2F', colour: 'blue' }, 'validation_failed');
      assert.equal(unknown.param, '/colour');
      assert.equal(unknown.details[0].code, 'unknown_field');
      assert.equal((await toolError(client, 'list_conversations', { limit: '5' }, 'validation_failed')).param, '/limit', 'never coerced');
      assert.equal((await toolError(client, 'list_conversations', { limit: 500 }, 'validation_failed')).param, '/limit');
      const cursors = await toolError(client, 'list_conversations', { after: 'cnv_1', before: 'cnv_2' }, 'validation_failed');
      assert.equal(cursors.param, '/before', 'a rule of the list query names the argument');
      assert.match(cursors.message, /^\/before /);
      const recipient = await toolError(client, 'send_message', { connection_id: line.id, type: 'text', text: { body: 'x' } }, 'validation_failed');
      assert.equal(recipient.param, '/contact_id', "a service's own rule names the argument too");
    });

    it("another organization's ids are resource_not_found, exactly as ids that do not exist", async (t) => {
      const beta = await signUp(server, { organizationName: 'Beta' });
      const betaLine = await createConnection(server, beta);
      const betaMessage = await inbound(server, betaLine);
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);
      await toolError(client, 'get_contact', { contact_id: betaMessage.contact_id }, 'resource_not_found');
      await toolError(client, 'get_message', { message_id: betaMessage.id }, 'resource_not_found');
      await toolError(client, 'get_conversation_context', { conversation_id: betaMessage.conversation_id }, 'resource_not_found');
      await toolError(client, 'tag_conversation', { conversation_id: betaMessage.conversation_id, tags: ['mine'] }, 'resource_not_found');
      const send = await toolError(
        client,
        'send_message',
        { connection_id: betaLine.id, contact_id: betaMessage.contact_id, type: 'text', text: { body: 'hi' }, idempotency_key: idempotencyKey() },
        'resource_not_found',
      );
      assert.equal(send.param, '/connection_id');
      const listed = await result(client, 'list_conversations', {});
      assert.ok(
        listed.data.every((conversation: { id: string }) => conversation.id !== betaMessage.conversation_id),
        "another organization's data is never listed",
      );
      const untouched = await server.request('GET', `/v1/conversations/${betaMessage.conversation_id}`, { token: beta.token });
      assert.deepEqual(untouched.body.tags, [], 'and nothing of it changed');
    });

    it('an unexpected failure is logged and answered as a JSON-RPC internal error that names only the request id', async () => {
      const broken: ToolDefinition = {
        name: 'broken',
        title: 'Broken',
        description: 'Fails as a bug would.',
        scope: null,
        input: Type.Object({}, { additionalProperties: false }),
        annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
        run: 'read',
        call: () => Promise.reject(new TypeError('secret detail at /srv/app.ts:12')),
      };
      const calls = createToolCalls({
        tools: [broken],
        gate: server.app.services.idempotencyKeys,
        openTransaction: server.app.store.openRequestTransaction,
        isUnavailable: server.app.store.dialect.isUnavailable,
        publicBaseUrl: server.config.publicBaseUrl,
      });
      const logged: unknown[] = [];
      const log = { info: () => undefined, warn: () => undefined, error: (object: object) => void logged.push(object) };
      const token = await mintToken(server, owner.organizationId);
      const principal = await server.app.services.credentials.authenticate(token.token);
      const answer = await answerMcp(
        {
          url: `${server.config.publicBaseUrl}/mcp`,
          headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-protocol-version': '2025-06-18' },
          body: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'broken', arguments: {} } },
        },
        { listTools: () => calls.list(principal), callTool: (name, args) => calls.call({ principal, requestId: 'req_test' }, name, args, log) },
        { name: 'test', version: '1', instructions: '' },
      );
      assert.equal(answer.status, 200, answer.body);
      const { error } = JSON.parse(answer.body);
      assert.equal(error.code, -32603);
      assert.match(error.message, /req_test/);
      assert.doesNotMatch(answer.body, /secret detail|app\.ts/);
      assert.equal(logged.length, 1, 'the cause is in the log');
      await assert.rejects(calls.call({ principal, requestId: 'req_test' }, 'broken', {}, log), ToolCallFailure);
    });

    it('an unknown tool is a JSON-RPC error, not a result', async (t) => {
      const client = await connect(t, server, (await mintToken(server, owner.organizationId)).token);
      await assert.rejects(client.callTool({ name: 'drop_tables', arguments: {} }), (error: unknown) => error instanceof McpError && error.code === -32602);
    });
  });

  describe('who may call', () => {
    const challenge = (error: boolean) =>
      `Bearer realm="mcp", ${error ? 'error="invalid_token", ' : ''}resource_metadata="${server.config.publicBaseUrl}/.well-known/oauth-protected-resource/mcp"`;

    it('no credential is 401 with the challenge that points at the resource metadata', async () => {
      const response = await post(server, undefined, listTools);
      assertError(response, 401, 'credential_missing');
      assert.equal(response.headers.get('www-authenticate'), challenge(false));
    });

    it('a token issued for /v1, or before resources existed, is refused 401 invalid_token, and the SDK client is told to authenticate', async () => {
      for (const resource of [`${server.config.publicBaseUrl}/v1`, null]) {
        const token = await mintToken(server, owner.organizationId, OAUTH_SCOPES, resource);
        const response = await post(server, token.token, listTools);
        assert.match(assertError(response, 401, 'credential_invalid').message, /not for http:\/\/localhost:3000\/mcp/);
        assert.equal(response.headers.get('www-authenticate'), challenge(true));
        await assert.rejects(
          connect({ after: () => undefined }, server, token.token),
          (error: unknown) => error instanceof StreamableHTTPError && error.code === 401,
        );
      }
    });

    it('an API key or a dashboard token is refused 401 invalid_token', async () => {
      const key = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
      for (const token of [key.key, owner.token]) {
        const response = await post(server, token, listTools);
        assert.match(assertError(response, 401, 'credential_invalid').message, /takes only an OAuth token/);
        assert.equal(response.headers.get('www-authenticate'), challenge(true));
      }
    });

    it('a revoked token is credential_revoked from its next call', async (t) => {
      const token = await mintToken(server, owner.organizationId);
      const client = await connect(t, server, token.token);
      await result(client, 'get_identity');
      await server.app.services.oauthTokens.revoke(owner.organizationId, token.id);
      await assert.rejects(call(client, 'get_identity'), (error: unknown) => error instanceof StreamableHTTPError && error.code === 401);
      const response = await post(server, token.token, listTools);
      assertError(response, 401, 'credential_revoked');
      assert.equal(response.headers.get('www-authenticate'), challenge(true));
    });

    it('the 41st request in a second is refused 429 with Retry-After; the client sees an HTTP error, and a second later calls again', async (t) => {
      const token = await mintToken(server, owner.organizationId);
      // initialize and notifications/initialized are two requests of the token's 40.
      const client = await connect(t, server, token.token);
      for (let index = 0; index < 38; index++) await result(client, 'get_identity');
      await assert.rejects(
        call(client, 'get_identity'),
        (error: unknown) => error instanceof StreamableHTTPError && error.code === 429 && /rate_limited/.test(error.message),
      );
      const refused = await post(server, token.token, listTools);
      assertError(refused, 429, 'rate_limited');
      assert.equal(refused.headers.get('retry-after'), '1');
      server.clock.advance(SECOND);
      await result(client, 'get_identity');
    });
  });

  describe('the HTTP surface', () => {
    it('GET and DELETE are 405: a stateless server has no stream to open and no session to end', async () => {
      const token = (await mintToken(server, owner.organizationId)).token;
      for (const method of ['GET', 'DELETE']) {
        const response = await server.request(method, '/mcp', { token, headers: { accept: 'text/event-stream' } });
        assertError(response, 405, 'method_not_allowed');
        assert.equal(response.headers.get('allow'), 'POST');
      }
    });

    it('answers JSON and no session id; a batch is refused', async () => {
      const token = (await mintToken(server, owner.organizationId)).token;
      const response = await post(server, token, listTools);
      assert.equal(response.status, 200, response.text);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(response.headers.get('mcp-session-id'), null);
      assert.ok(response.body.result.tools.length > 0);
      const batch = await post(server, token, [listTools, { ...listTools, id: 2 }]);
      assert.equal(assertError(batch, 400, 'validation_failed').param, '/');
    });
  });
});
