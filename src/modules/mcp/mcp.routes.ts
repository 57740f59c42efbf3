import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { requirePrincipal } from '../../http/access.ts';
import type { HttpServer } from '../../http/server.ts';
import { AppError } from '../../lib/errors.ts';
import type { ToolCalls } from './mcp-tool-calls.ts';
import type * as McpTransport from './mcp-transport.ts';
import type { McpServerInfo } from './mcp-transport.ts';

/**
 * One JSON-RPC 2.0 message, checked by the transport. An array (a batch, which MCP dropped in
 * 2025-06-18) is refused here: a batch of calls would pass the rate limit, which counts requests, as one.
 */
const JsonRpcMessage = Type.Object({}, { additionalProperties: true, description: 'One JSON-RPC 2.0 message: a request, a notification or a response.' });

/** What the transport reads of a request; the credential and cookies stay here. */
const FORWARDED_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];
const ANSWERED_HEADERS = ['content-type', 'allow'];

// The SDK (and the zod it brings) is loaded by the first /mcp request: most processes never serve one.
let transport: Promise<typeof McpTransport> | undefined;
const loadTransport = () => (transport ??= import('./mcp-transport.ts'));

/**
 * `POST /mcp`, the tool server (docs/mcp.md). Authentication is the shared hook's; what is particular
 * here is who is admitted and how a refusal is told. Only an OAuth access token issued for this
 * resource (RFC 8707 `resource` = `<base>/mcp`) is admitted: an API key or a dashboard token (the
 * access rule's `otherKinds`) and a token for /v1 (here) are refused 401 `credential_invalid`, not 403, because an MCP client reacts to a 401
 * by authorizing (and to a 403 only by asking for more scopes). Every 401 carries the challenge that
 * points the client at the resource's metadata (RFC 6750, RFC 9728), from which it finds the
 * authorization server. GET and DELETE are 405: a stateless server offers no event stream and no
 * session to end.
 */
export function registerMcpRoutes(app: HttpServer, deps: { toolCalls: ToolCalls; publicBaseUrl: string; info: McpServerInfo }): void {
  const { toolCalls, publicBaseUrl, info } = deps;
  const resource = `${publicBaseUrl}/mcp`;
  const metadata = `${publicBaseUrl}/.well-known/oauth-protected-resource/mcp`;

  /** The kind is the access rule's to check; the audience is this resource's (RFC 8707). */
  async function admit(request: FastifyRequest): Promise<void> {
    const principal = requirePrincipal(request);
    if (principal.resource !== resource) {
      throw new AppError(
        'credential_invalid',
        `This OAuth access token was issued for ${principal.resource ?? `${publicBaseUrl}/v1`}, not for ${resource}; obtain one for it through the authorization server its resource metadata names (${metadata}).`,
      );
    }
  }

  async function challenge(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    if (reply.statusCode === 401) {
      // Without a credential the challenge names no error (RFC 6750 §3.1); with one, it was not a token for here.
      const error = request.headers.authorization === undefined ? '' : 'error="invalid_token", ';
      void reply.header('www-authenticate', `Bearer realm="mcp", ${error}resource_metadata="${metadata}"`);
    }
    return payload;
  }

  app.post('/mcp', {
    config: { access: { scope: null, credentials: ['oauth_token'], otherKinds: 'unauthenticated' }, waitsOnNetwork: true },
    schema: {
      tags: ['Tool server (MCP)'],
      summary: 'The MCP tool server: Streamable HTTP, stateless, JSON answers',
      description:
        'For MCP clients holding an OAuth access token issued for the resource `{PUBLIC_BASE_URL}/mcp`; any other credential is 401 with a `WWW-Authenticate` challenge naming the resource metadata. The tools and their scopes are in docs/mcp.md and in `tools/list`. GET and DELETE are 405.',
      body: JsonRpcMessage,
    },
    // Route hooks run after the server's: the credential is authenticated and charged to its bucket by then.
    onRequest: admit,
    onSend: challenge,
    handler: async (request, reply) => {
      const principal = requirePrincipal(request);
      const actor = { principal, requestId: request.id };
      const headers: Record<string, string> = {};
      for (const name of FORWARDED_HEADERS) {
        const value = request.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const { answerMcp } = await loadTransport();
      const answer = await answerMcp(
        { url: resource, headers, body: request.body },
        { listTools: () => toolCalls.list(principal), callTool: (name, args) => toolCalls.call(actor, name, args, request.log) },
        info,
      );
      void reply.code(answer.status);
      for (const name of ANSWERED_HEADERS) if (answer.headers[name] !== undefined) void reply.header(name, answer.headers[name]);
      return reply.send(answer.body === '' ? undefined : answer.body);
    },
  });
}
