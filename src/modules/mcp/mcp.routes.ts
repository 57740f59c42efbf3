import type { FastifyReply, FastifyRequest } from 'fastify';
import { requirePrincipal } from '../../http/access.ts';
import type { HttpServer } from '../../http/server.ts';
import { AppError } from '../../lib/errors.ts';
import type { CredentialKind } from '../credentials/scopes.schemas.ts';
import type { ToolCalls } from './mcp-tool-calls.ts';
import type { McpServerInfo } from './mcp-transport.ts';

const CREDENTIAL_NAMES: Record<CredentialKind, string> = {
  connection_key: 'a connection key',
  organization_key: 'an organization key',
  oauth_token: 'an OAuth token',
  dashboard_token: 'a dashboard token',
};

/** What the transport reads of a request; the credential and cookies stay here. */
const FORWARDED_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];
const ANSWERED_HEADERS = ['content-type', 'allow'];

// The SDK (and the zod it brings) is loaded by the first /mcp request: most processes never serve one.
let transport: Promise<typeof import('./mcp-transport.ts')> | undefined;
const loadTransport = () => (transport ??= import('./mcp-transport.ts'));

/**
 * `POST /mcp`, the tool server (docs/mcp.md). Authentication is the shared hook's; what is particular
 * here is who is admitted and how a refusal is told. Only an OAuth access token issued for this
 * resource (RFC 8707 `resource` = `<base>/mcp`) is admitted: an API key, a dashboard token or a
 * token for /v1 is refused 401 `credential_invalid`, not 403, because an MCP client reacts to a 401
 * by authorizing (and to a 403 only by asking for more scopes). Every 401 carries the challenge that
 * points the client at the resource's metadata (RFC 6750, RFC 9728), from which it finds the
 * authorization server. GET and DELETE are 405: a stateless server offers no event stream and no
 * session to end.
 */
export function registerMcpRoutes(app: HttpServer, deps: { toolCalls: ToolCalls; publicBaseUrl: string; info: McpServerInfo }): void {
  const { toolCalls, publicBaseUrl, info } = deps;
  const resource = `${publicBaseUrl}/mcp`;
  const metadata = `${publicBaseUrl}/.well-known/oauth-protected-resource/mcp`;

  async function admit(request: FastifyRequest): Promise<void> {
    const principal = requirePrincipal(request);
    const howToAuthorize = `obtain one through the OAuth authorization server its resource metadata names (${metadata})`;
    if (principal.kind !== 'oauth_token') {
      throw new AppError(
        'credential_invalid',
        `The tool server takes only OAuth access tokens issued for ${resource}, not ${CREDENTIAL_NAMES[principal.kind]}; ${howToAuthorize}.`,
      );
    }
    if (principal.resource !== resource) {
      throw new AppError(
        'credential_invalid',
        `This OAuth access token was issued for ${principal.resource ?? `${publicBaseUrl}/v1`}, not for ${resource}; ${howToAuthorize}.`,
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
    config: { access: { scope: null }, waitsOnNetwork: true },
    // Not an operation of the REST API: docs/mcp.md describes it, tools/list its tools.
    schema: { hide: true },
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
