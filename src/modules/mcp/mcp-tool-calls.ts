/**
 * Calling a tool as a REST request is served: the scope checked, the arguments validated by the
 * same strict Ajv, a write run in one transaction and a keyed send answered once, through the same
 * idempotency gate as the `Idempotency-Key` header. What a failure becomes is decided here too: a
 * catalogue error is a tool result carrying our error envelope (the model reads it and can act on
 * it); anything else is logged and becomes `ToolCallFailure`, which the transport answers as a
 * JSON-RPC error that says nothing of the cause.
 */
import type { ValidateFunction } from 'ajv';
import type { RequestTransaction } from '../../db/request-transaction.ts';
import { compileJsonValidator, validationError } from '../../http/validation.ts';
import type { IdempotencyGate } from '../../http/write-requests.ts';
import { AppError, errorBody, type ErrorDetail } from '../../lib/errors.ts';
import type { Log } from '../../lib/log.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import type { ToolAnnotations, ToolDefinition } from './mcp-tools.ts';

/** A tool as `tools/list` shows it. */
export interface ToolListing {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
  annotations: ToolAnnotations & { title: string };
}

/** A `tools/call` result (MCP's CallToolResult): JSON text for any client, the same object as structured content. */
export interface ToolResult {
  content: { type: 'text'; text: string }[];
  structuredContent: Record<string, unknown>;
  isError?: true;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Why a call is answered with a JSON-RPC error instead of a result. */
export class ToolCallFailure extends Error {
  readonly reason: 'unknown_tool' | 'internal';

  constructor(reason: 'unknown_tool' | 'internal', message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

export interface ToolCalls {
  /** The tools the principal's scopes allow, in catalogue order. */
  list(principal: Principal): ToolListing[];
  call(actor: Actor, name: string, args: Record<string, unknown>, log: Log): Promise<ToolResult>;
}

interface Tool {
  definition: ToolDefinition;
  listing: ToolListing;
  validate: () => ValidateFunction;
}

/** Compiled on a tool's first call, as route schemas are (schema-compilers.ts): most processes never serve most tools. */
function lazily<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}

/**
 * Errors of the REST code name their field by where it sits in a request: `/query/after`, `/path/id`,
 * `/header/idempotency-key`. A tool takes all of them as arguments of the same names, so the pointer
 * is the argument's; a path id is the tool's id argument.
 */
function argumentPointer(param: string, idArgument: string | undefined): string {
  if (param === '/header/idempotency-key') return '/idempotency_key';
  if (param === '/path/id' && idArgument) return `/${idArgument}`;
  const located = /^\/(query|path)(\/.*)$/.exec(param);
  return located?.[2] ?? param;
}

function inArguments(error: AppError, idArgument: string | undefined): AppError {
  const param = error.param === null ? null : argumentPointer(error.param, idArgument);
  const details: ErrorDetail[] = error.details.map((detail) => ({ ...detail, param: argumentPointer(detail.param, idArgument) }));
  const moved = param !== error.param || details.some((detail, index) => detail.param !== error.details[index]?.param);
  if (!moved) return error;
  const message =
    error.param !== null && param !== null && error.message.startsWith(error.param) ? param + error.message.slice(error.param.length) : error.message;
  return new AppError(error.code, message, { param, details, extra: error.extra, headers: error.headers, cause: error.cause });
}

function asObject(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
}

function success(value: unknown, meta?: Record<string, unknown>): ToolResult {
  const structured = asObject(value);
  return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured, ...(meta ? { _meta: meta } : {}) };
}

function failure(envelope: Record<string, unknown>, meta?: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(envelope) }], structuredContent: envelope, isError: true, ...(meta ? { _meta: meta } : {}) };
}

/** What a call answered, as the gate stores it: the result's JSON, or the error envelope's with its status. */
interface Answer {
  status: number;
  body: string;
  errorCode: string | undefined;
}

export function createToolCalls<Claim>(deps: {
  tools: readonly ToolDefinition[];
  gate: IdempotencyGate<Claim>;
  openTransaction: () => Promise<RequestTransaction>;
  /** Recognises a store failure a retry may cure (the dialect's), answered `service_unavailable` as on REST. */
  isUnavailable: (error: unknown) => boolean;
  publicBaseUrl: string;
}): ToolCalls {
  const { gate, openTransaction, isUnavailable, publicBaseUrl } = deps;
  const tools = new Map<string, Tool>();
  for (const definition of deps.tools) {
    if (tools.has(definition.name)) throw new Error(`two tools are named ${definition.name}`);
    // A key is claimed and answered inside the call's transaction; a tool without one could not keep it.
    if (definition.keyed && definition.run !== 'transaction')
      throw new Error(`tool ${definition.name} takes an idempotency key but runs outside a transaction`);
    tools.set(definition.name, {
      definition,
      listing: {
        name: definition.name,
        title: definition.title,
        description: definition.description,
        inputSchema: definition.input as unknown as ToolListing['inputSchema'],
        annotations: { title: definition.title, ...definition.annotations },
      },
      validate: lazily(() => compileJsonValidator(definition.input)),
    });
  }

  const envelopeOf = (error: AppError, requestId: string) => errorBody(error, requestId, publicBaseUrl);

  /** A catalogue error as the tool's result; anything else logged and refused without its cause. */
  function toFailure(error: unknown, tool: Tool, requestId: string, log: Log): ToolResult {
    const known =
      error instanceof AppError
        ? error
        : isUnavailable(error)
          ? new AppError('service_unavailable', 'A dependency of the service is unreachable; retry shortly.', { cause: error })
          : undefined;
    if (!known) {
      log.error({ err: error, tool: tool.definition.name }, 'tool call failed');
      throw new ToolCallFailure('internal', `An unexpected error occurred; the service's log has it under request id ${requestId}.`, { cause: error });
    }
    if (known.status >= 500) log.warn({ err: error, code: known.code, tool: tool.definition.name }, 'tool call failed');
    return failure(envelopeOf(inArguments(known, tool.definition.idArgument), requestId));
  }

  /**
   * A write in one transaction, as a write request runs (http/write-requests.ts): a keyed call claims
   * its key in it and writes its answer beside the work, so both commit or neither; a final error is
   * stored after the rollback, in a commit of its own, as REST stores it. Two concurrent first calls
   * with one key: the second's answer meets the first's on commit, and it answers as the first did.
   */
  async function inTransaction(actor: Actor, tool: Tool, input: Record<string, unknown>, key: string | undefined): Promise<ToolResult> {
    const fingerprint = { method: 'TOOL', route: `mcp:${tool.definition.name}`, params: {}, query: {}, body: input };
    const transaction = await openTransaction();
    let claim: Claim | undefined;
    let answer: Answer;
    try {
      if (key !== undefined) {
        const begun = await transaction.run(() => gate.begin(actor.principal, key, fingerprint, 'with-work'));
        if (begun.kind === 'replay') {
          // The answer may come from work not yet committed (SQLite's commit group): only a kept one is replayed.
          if (!(await transaction.rollback())) throw uncommitted();
          return replay(begun);
        }
        claim = begun.claim;
      }
      const result = await transaction.run(() => tool.definition.call(actor, input));
      answer = { status: 200, body: JSON.stringify(result), errorCode: undefined };
    } catch (error) {
      if (!(await transaction.rollback())) throw uncommitted();
      if (claim !== undefined && error instanceof AppError) await storeError(claim, error, actor.requestId, tool);
      throw error;
    }
    try {
      if (claim !== undefined) {
        const stored = claim;
        await transaction.run(() => gate.finish(stored, answer));
      }
      await transaction.commit();
    } catch (error) {
      await transaction.rollback();
      const first = claim === undefined ? undefined : await gate.replayOf(claim).catch(() => undefined);
      if (first) return replay(first);
      throw error;
    }
    return success(JSON.parse(answer.body));
  }

  async function storeError(claim: Claim, error: AppError, requestId: string, tool: Tool): Promise<void> {
    const body = JSON.stringify(envelopeOf(inArguments(error, tool.definition.idArgument), requestId));
    // Not final (retryable, validation) releases the key, as on REST; a failure to store keeps the error the caller gets.
    await gate.finish(claim, { status: error.status, body, errorCode: error.code }).catch(() => undefined);
  }

  /** An answer read from work whose commit then failed: the caller retries, as after a failed commit. */
  function uncommitted(): AppError {
    return new AppError('service_unavailable', 'The call failed to commit, or its commit was not confirmed; retry it with the same idempotency_key.');
  }

  function replay(answer: { status: number; body: string }): ToolResult {
    const meta = { idempotency_replayed: true };
    const value = JSON.parse(answer.body) as unknown;
    return answer.status >= 400 ? failure(asObject(value), meta) : success(value, meta);
  }

  return {
    list(principal) {
      return [...tools.values()].filter(({ definition }) => definition.scope === null || principal.scopes.has(definition.scope)).map((tool) => tool.listing);
    },

    async call(actor, name, args, log) {
      const tool = tools.get(name);
      if (!tool) throw new ToolCallFailure('unknown_tool', `No tool is named ${name}; tools/list shows the ones this token may call.`);
      const { definition } = tool;
      try {
        if (definition.scope !== null && !actor.principal.scopes.has(definition.scope)) {
          throw new AppError('scope_missing', `The ${name} tool requires the ${definition.scope} scope.`, { extra: { required_scope: definition.scope } });
        }
        const validate = tool.validate();
        if (!validate(args)) throw validationError(validate.errors ?? [], 'body');
        const { idempotency_key: key, ...input } = args as Record<string, unknown> & { idempotency_key?: string };
        if (definition.run === 'transaction') return await inTransaction(actor, tool, definition.keyed ? input : args, definition.keyed ? key : undefined);
        return success(await definition.call(actor, args));
      } catch (error) {
        return toFailure(error, tool, actor.requestId, log);
      }
    },
  };
}
