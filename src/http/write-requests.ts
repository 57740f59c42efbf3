import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { RequestTransaction } from '../db/request-transaction.ts';
import { AppError, errorBody } from '../lib/errors.ts';
import type { Principal } from '../modules/credentials/principal.ts';
import { routeHooks, routeMethods } from './route-hooks.ts';
import type { HttpServer } from './server.ts';

export type IdempotencyRequirement = 'required' | 'optional';

/** How a request's key is kept: with the request's work, or (a route that calls out) in commits of its own. */
export type KeyHandling = 'with-work' | 'own-commits';

type Begun<Claim> = { readonly kind: 'execute'; readonly claim: Claim } | { readonly kind: 'replay'; readonly status: number; readonly body: string };

/**
 * What the hooks ask of the idempotency-keys module, whose service answers it: the rules (what a
 * key may be, when a response is replayed, stored or released) live there, the HTTP here.
 */
export interface IdempotencyGate<Claim> {
  readKey(header: string | string[] | undefined, requirement: IdempotencyRequirement): string | undefined;
  begin(
    caller: Principal,
    key: string,
    request: { method: string; route: string; params: unknown; query: unknown; body: unknown },
    handling: KeyHandling,
  ): Promise<Begun<Claim>>;
  finish(claim: Claim, response: { status: number; body: string | undefined; errorCode: string | undefined }): Promise<'stored' | 'released' | 'lost'>;
  replayOf(claim: Claim): Promise<{ status: number; body: string } | undefined>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Every authenticated POST accepts `Idempotency-Key` (default `optional`); send endpoints declare
     * `required`. Public routes cannot: keys are scoped to the caller's organization.
     */
    idempotency?: IdempotencyRequirement;
    /**
     * The handler waits on the network while the client waits: it calls the provider or a webhook
     * receiver, resolves a name, or reads an upload as it streams in. Such a route runs outside a
     * request transaction (which would hold the database for the wait: on SQLite, every other
     * request): its writes commit as its services make them, and its key is claimed and answered in
     * commits of their own. `assertNoRequestTransaction` turns a forgotten declaration into an error.
     */
    waitsOnNetwork?: boolean;
  }
}

const HEADER = 'idempotency-key';
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function isAuthenticated(route: Pick<RouteOptions, 'config'>): boolean {
  const access = route.config?.access;
  return access !== undefined && !access.public;
}

function errorCodeOf(status: number, body: string | undefined): string | undefined {
  if (status < 400 || !body) return undefined;
  try {
    const code = (JSON.parse(body) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

function textOf(payload: unknown): string | undefined {
  if (typeof payload === 'string') return payload;
  if (Buffer.isBuffer(payload)) return payload.toString('utf8');
  return payload == null ? '' : undefined;
}

/**
 * The two rules of a write request, applied to every authenticated write route:
 *
 * - One transaction (`RequestTransaction`): opened once authentication, scopes, rate limits and
 *   validation have passed, joined by every query of the handler, committed after the response is
 *   serialized (a success) or rolled back (an error). One durable commit per write, never a partial one.
 * - The Idempotency-Key of a POST: its answer is written in that same transaction, so a crash leaves
 *   either nothing (the retry does the work) or the work and its answer (the retry replays it).
 *
 * The hooks are attached to each route rather than to the server because route-level hooks run after
 * every server-level hook of the same kind: a refused request opens nothing, and the response is
 * captured as serialized, after any other onSend hook. Must be registered before the routes.
 */
export function registerWriteRequests<Claim>(
  app: HttpServer,
  deps: { gate: IdempotencyGate<Claim>; openTransaction: () => Promise<RequestTransaction>; publicBaseUrl: string },
): void {
  const { gate, openTransaction, publicBaseUrl } = deps;
  const claims = new WeakMap<FastifyRequest, Claim>();
  const transactions = new WeakMap<FastifyRequest, RequestTransaction>();

  function keyOf(request: FastifyRequest): string | undefined {
    if (request.method !== 'POST' || !request.principal) return undefined;
    return gate.readKey(request.headers[HEADER], request.routeOptions.config.idempotency ?? 'optional');
  }

  function fingerprintOf(request: FastifyRequest) {
    return { method: request.method, route: request.routeOptions.url ?? request.url, params: request.params, query: request.query, body: request.body };
  }

  function replay(reply: FastifyReply, answer: { status: number; body: string }): FastifyReply {
    return reply.code(answer.status).header('idempotency-replayed', 'true').type('application/json; charset=utf-8');
  }

  /** `preHandler` of a route that runs in a request transaction: opens it, then claims the key within. */
  async function openAndClaim(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const key = keyOf(request);
    const transaction = await openTransaction();
    try {
      if (key !== undefined) {
        const begun = await transaction.run(() => gate.begin(request.principal!, key, fingerprintOf(request), 'with-work'));
        if (begun.kind === 'replay') {
          // The answer replayed may come from work not yet committed (SQLite's commit group): only a kept one is replayed.
          if (!(await transaction.rollback())) return reply.send(failedCommit(request, reply, undefined));
          return replay(reply, begun).send(begun.body);
        }
        claims.set(request, begun.claim);
      }
    } catch (error) {
      await transaction.rollback();
      throw error;
    }
    transactions.set(request, transaction);
    return undefined;
  }

  /** `preHandler` of a route that waits on the network: claims the key in a commit of its own. */
  async function claimOnItsOwn(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const key = keyOf(request);
    if (key === undefined) return undefined;
    const begun = await gate.begin(request.principal!, key, fingerprintOf(request), 'own-commits');
    if (begun.kind === 'replay') return replay(reply, begun).send(begun.body);
    claims.set(request, begun.claim);
    return undefined;
  }

  /**
   * Replaces an answer whose commit failed. Usually nothing of the request was kept; a connection that
   * broke during the commit leaves it unknown. A retry with the same key is right either way.
   */
  function failedCommit(request: FastifyRequest, reply: FastifyReply, error: unknown): string {
    request.log.error({ err: error }, 'the request transaction could not commit, or its commit was not confirmed');
    const failure = new AppError(
      'service_unavailable',
      'The request failed to commit, or its commit was not confirmed; retry it with the same Idempotency-Key, which does it exactly once either way.',
      { cause: error },
    );
    reply.code(failure.status).header('retry-after', '1').type('application/json; charset=utf-8');
    return JSON.stringify(errorBody(failure, request.id, publicBaseUrl));
  }

  async function settle(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const transaction = transactions.get(request);
    const claim = claims.get(request);
    transactions.delete(request);
    claims.delete(request);
    const body = textOf(payload);
    const response = { status: reply.statusCode, body, errorCode: errorCodeOf(reply.statusCode, body) };

    if (transaction && reply.statusCode < 400) {
      try {
        // Written before the response leaves, so a client that retries the moment it has its answer finds it.
        if (claim) await transaction.run(() => gate.finish(claim, response));
        await transaction.commit();
        return payload;
      } catch (error) {
        await transaction.rollback();
        // A concurrent first request with the same key answered first: this one's work is undone, and
        // it answers as that request did.
        const answer = claim ? await gate.replayOf(claim).catch(() => undefined) : undefined;
        if (answer) {
          replay(reply, answer);
          return answer.body;
        }
        return failedCommit(request, reply, error);
      }
    }
    // An error answered from work not yet committed (SQLite's commit group) stands only if that work was kept.
    if (transaction && !(await transaction.rollback())) return failedCommit(request, reply, undefined);
    if (!claim) return payload;
    try {
      const finished = await gate.finish(claim, response);
      if (finished === 'lost')
        request.log.warn({ idempotency_key: request.headers[HEADER] }, 'another request answered this idempotency key first; this response was not stored');
    } catch (error) {
      // The client still gets its answer. The key stays as it was: free, when the work rolled back with
      // the request's transaction; in flight until its lock times out, on a route that waits on the network.
      request.log.error({ err: error, idempotency_key: request.headers[HEADER] }, 'could not record the idempotent response');
    }
    return payload;
  }

  /** A request that ended without sending (its connection dropped mid-way) must not keep the database. */
  async function abandon(request: FastifyRequest): Promise<void> {
    const transaction = transactions.get(request);
    if (!transaction) return;
    transactions.delete(request);
    await transaction.rollback();
  }

  app.addHook('onRoute', (route) => {
    const authenticated = isAuthenticated(route);
    const methods = routeMethods(route);
    if (route.config?.idempotency && !(authenticated && methods.includes('POST'))) {
      throw new Error(`route ${String(route.method)} ${route.url} declares idempotency, which only authenticated POST routes take`);
    }
    if (!authenticated || !methods.some((method) => WRITE_METHODS.has(method))) return;
    if (route.config?.waitsOnNetwork) {
      if (!methods.includes('POST')) return;
      route.preHandler = [...routeHooks(route.preHandler), claimOnItsOwn];
    } else {
      route.preHandler = [...routeHooks(route.preHandler), openAndClaim];
      const handler = route.handler;
      const inTransaction: typeof handler = function (request, reply) {
        const transaction = transactions.get(request);
        return transaction ? transaction.run(() => handler.call(this, request, reply)) : handler.call(this, request, reply);
      };
      route.handler = inTransaction;
      route.onResponse = [...routeHooks(route.onResponse), abandon];
    }
    route.onSend = [...routeHooks(route.onSend), settle];
  });
}
