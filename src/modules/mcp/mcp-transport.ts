/**
 * The MCP SDK behind one door: the only file that imports its server classes. Each POST gets a
 * server and a Streamable HTTP transport of its own, stateless (no session id) and answering JSON
 * rather than an event stream, as the tool server keeps nothing between requests; the transport
 * speaks the protocol (initialize, version negotiation, JSON-RPC framing and its errors) and hands
 * `tools/list` and `tools/call` to the callbacks given. Requests and answers cross as plain data, so
 * Fastify stays in charge of the HTTP exchange (its hooks, headers and logging).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { ToolCallFailure, type ToolListing, type ToolResult } from './mcp-tool-calls.ts';

export interface McpExchange {
  /** The request's full URL. */
  url: string;
  headers: Record<string, string>;
  /** The parsed JSON body. */
  body: unknown;
}

export interface McpAnswer {
  status: number;
  headers: Record<string, string>;
  /** JSON text, or empty (202: notifications only). */
  body: string;
}

export interface McpHandlers {
  listTools(): ToolListing[];
  callTool(name: string, args: Record<string, unknown>): Promise<ToolResult>;
}

export interface McpServerInfo {
  name: string;
  version: string;
  instructions: string;
}

const FAILURE_CODES: Record<ToolCallFailure['reason'], number> = {
  unknown_tool: ErrorCode.InvalidParams,
  internal: ErrorCode.InternalError,
};

export async function answerMcp(exchange: McpExchange, handlers: McpHandlers, info: McpServerInfo): Promise<McpAnswer> {
  const server = new Server({ name: info.name, version: info.version }, { capabilities: { tools: { listChanged: false } }, instructions: info.instructions });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: handlers.listTools() }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    try {
      return await handlers.callTool(request.params.name, request.params.arguments ?? {});
    } catch (error) {
      // The protocol would send any error's own message; only ours, which say nothing of a cause, leave.
      if (error instanceof ToolCallFailure) throw new McpError(FAILURE_CODES[error.reason], error.message);
      throw new McpError(ErrorCode.InternalError, 'An unexpected error occurred.');
    }
  });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const response = await transport.handleRequest(new Request(exchange.url, { method: 'POST', headers: exchange.headers }), { parsedBody: exchange.body });
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    return { status: response.status, headers, body: await response.text() };
  } finally {
    await server.close();
  }
}
