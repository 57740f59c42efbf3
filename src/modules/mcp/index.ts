/**
 * The tool server (MCP): `POST /mcp`, where AI agents and other MCP clients holding an OAuth access
 * token issued for this resource list and call about eighteen task-shaped tools. Owns the tool
 * catalogue (mcp-tools.ts), how a call runs and fails (mcp-tool-calls.ts), the route with its
 * admission and challenge (mcp.routes.ts) and the one adapter over the MCP SDK (mcp-transport.ts).
 * It owns no table: every tool calls the services the REST routes call, with the same scopes,
 * validation, transactions, idempotency and audit. See docs/mcp.md.
 */
import type { RequestTransaction } from '../../db/request-transaction.ts';
import type { IdempotencyGate } from '../../http/write-requests.ts';
import type { Module } from '../module.ts';
import { createToolCalls } from './mcp-tool-calls.ts';
import { createTools, type ToolServices } from './mcp-tools.ts';
import { registerMcpRoutes } from './mcp.routes.ts';

const INSTRUCTIONS =
  'Tools of a WhatsApp business-messaging service, acting for one organization with the scopes this token was granted. ' +
  'Start with get_identity and list_connections; read a thread with get_conversation_context before answering it. ' +
  'Free-form messages need the customer to have written in the last 24 hours; otherwise send an approved template (list_templates shows what each needs). ' +
  'Give every send an idempotency_key and reuse it when retrying. Errors carry a code and a doc_url.';

export function createMcpModule<Claim>(
  deps: ToolServices & {
    gate: IdempotencyGate<Claim>;
    openTransaction: () => Promise<RequestTransaction>;
    isUnavailable: (error: unknown) => boolean;
    publicBaseUrl: string;
    version: string;
  },
): Module {
  const toolCalls = createToolCalls({
    tools: createTools(deps),
    gate: deps.gate,
    openTransaction: deps.openTransaction,
    isUnavailable: deps.isUnavailable,
    publicBaseUrl: deps.publicBaseUrl,
  });
  const info = { name: 'messaging-service', version: deps.version, instructions: INSTRUCTIONS };
  return { name: 'mcp', service: undefined, routes: (server) => registerMcpRoutes(server, { toolCalls, publicBaseUrl: deps.publicBaseUrl, info }) };
}
