/**
 * The tool server as an MCP client meets it: the SDK's own Client and Streamable HTTP transport with
 * its OAuth client provider, from the first 401 through discovery, registration, PKCE and consent to
 * tool calls, and a refresh when the access token expires, all against a listening server.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { HOUR, MINUTE } from '../src/lib/clock.ts';
import { createConnection, signUp, type SignedUp } from './factories.ts';
import { startServer, suiteScope, type TestServer } from './harness.ts';
import { consentInBrowser, publicFetch, TestMcpClient } from './oauth-browser.ts';

const REDIRECT_URI = 'http://127.0.0.1:4567/callback';

describe('an MCP client connecting through OAuth', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
    await createConnection(server, owner, { name: 'Support line' });
  });

  const transportFor = (provider: TestMcpClient) =>
    new StreamableHTTPClientTransport(new URL(`${server.config.publicBaseUrl}/mcp`), { authProvider: provider, fetch: publicFetch(server) });

  async function toolResult(client: Client, name: string): Promise<any> {
    const answer = (await client.callTool({ name, arguments: {} })) as { isError?: boolean; structuredContent?: unknown; content: { text: string }[] };
    assert.notEqual(answer.isError, true, answer.content[0]?.text);
    return answer.structuredContent;
  }

  it('is challenged, discovers, registers, gets consent for the scopes the person ticks, calls tools, and refreshes an expired token', async () => {
    const provider = new TestMcpClient(REDIRECT_URI);
    const first = new Client({ name: 'agent', version: '1.0.0' });
    // No token yet: the first request is a 401 whose challenge leads the SDK to the authorization server.
    await assert.rejects(first.connect(transportFor(provider)), UnauthorizedError);
    const authorizationUrl = provider.authorizationUrl!;
    assert.equal(authorizationUrl.searchParams.get('resource'), `${server.config.publicBaseUrl}/mcp`);

    // The person grants reading messages (and so conversations), contacts and connections only.
    const scopes = ['connections:read', 'messages:read', 'contacts:read'];
    const pages = await consentInBrowser(server, authorizationUrl, { ...owner, scopes });
    const pending = transportFor(provider);
    await pending.finishAuth(pages.callback.searchParams.get('code')!);

    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(transportFor(provider));
    suite.after(() => client.close());
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    assert.ok(tools.includes('list_connections') && tools.includes('list_conversations'), tools.join(', '));
    assert.ok(!tools.includes('send_message') && !tools.includes('get_usage'), `only what was granted is listed: ${tools.join(', ')}`);
    const identity = await toolResult(client, 'get_identity');
    assert.equal(identity.organization.id, owner.organizationId);
    const connections = await toolResult(client, 'list_connections');
    assert.deepEqual(
      connections.data.map((connection: { name: string }) => connection.name),
      ['Support line'],
    );

    // An hour later the access token has expired: the SDK refreshes it (a rotated pair) and the call goes through.
    const before = provider.tokens()!;
    server.clock.advance(HOUR + MINUTE);
    const again = await toolResult(client, 'list_connections');
    assert.equal(again.data.length, 1);
    const after = provider.tokens()!;
    assert.notEqual(after.access_token, before.access_token);
    assert.notEqual(after.refresh_token, before.refresh_token);
  });
});
