import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Principal } from '../modules/credentials/principal.ts';
import type { HttpServer } from './server.ts';

export type IdempotencyRequirement = 'required' | 'optional';

/**
 * What the hooks ask of the idempotency-keys module, whose service answers it: the rules (what a
 * key may be, when a response is replayed, stored or released) live there, the HTTP here.
 */
export interface IdempotencyGate<Claim extends { readonly scope: { readonly key: string } }> {
  readKey(header: string | string[] | undefined, requirement: IdempotencyRequirement): string | undefined;
  begin(
    caller: Principal,
    key: string,
    request: { method: string; route: string; params: unknown; query: unknown; body: unknown },
  ): Promise<{ readonly kind: 'execute'; readonly claim: Claim } | { readonly kind: 'replay'; readonly status: number; readonly body: string }>;
  finish(claim: Claim, response: { status: number; body: string | undefined; errorCode: string | undefined }): Promise<'stored' | 'released' | 'lost'>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Every authenticated POST accepts `Idempotency-Key` (default `optional`); send endpoints declare
     * `required`. Public routes cannot: keys are scoped to the caller's organization.
     */
    idempotency?: IdempotencyRequirement;
  }
}

const HEADER = 'idempotency-key';

function isCovered(route: Pick<RouteOptions, 'method' | 'config'>): boolean {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const access = route.config?.access;
  return methods.includes('POST') && access !== undefined && !access.public;
}

function hooks<T>(existing: T | T[] | undefined): T[] {
  if (existing === undefined) return [];
  return Array.isArray(existing) ? existing : [existing];
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

/**
 * Applies the idempotency rules to every authenticated POST route. The hooks are attached to each such
 * route rather than to the server because route-level hooks run after every server-level hook of the
 * same kind: the key is claimed only once authentication, scopes, rate limits and validation have all
 * passed (a refused request stores nothing), and the response is captured as serialized after any
 * other onSend hook. Must be registered before the routes.
 */
export function registerIdempotency<Claim extends { readonly scope: { readonly key: string } }>(app: HttpServer, service: IdempotencyGate<Claim>): void {
  const claims = new WeakMap<FastifyRequest, Claim>();

  async function claimKey(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const principal = request.principal;
    if (request.method !== 'POST' || !principal) return undefined;
    const key = service.readKey(request.headers[HEADER], request.routeOptions.config.idempotency ?? 'optional');
    if (key === undefined) return undefined;
    const begun = await service.begin(principal, key, {
      method: request.method,
      route: request.routeOptions.url ?? request.url,
      params: request.params,
      query: request.query,
      body: request.body,
    });
    if (begun.kind === 'execute') {
      claims.set(request, begun.claim);
      return undefined;
    }
    return reply.code(begun.status).header('idempotency-replayed', 'true').type('application/json; charset=utf-8').send(begun.body);
  }

  async function captureResponse(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
    const claim = claims.get(request);
    if (!claim) return payload;
    claims.delete(request);
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : payload == null ? '' : undefined;
    try {
      // Awaited before the response leaves, so a client that retries the moment it has its answer
      // finds the key completed rather than in flight.
      const finished = await service.finish(claim, { status: reply.statusCode, body, errorCode: errorCodeOf(reply.statusCode, body) });
      if (finished === 'lost')
        request.log.warn({ idempotency_key: claim.scope.key }, 'idempotency key was taken over while this request ran; its response was not stored');
    } catch (error) {
      // The client still gets its answer; the key stays in flight until its lock times out.
      request.log.error({ err: error, idempotency_key: claim.scope.key }, 'could not record the idempotent response');
    }
    return payload;
  }

  app.addHook('onRoute', (route) => {
    if (!isCovered(route)) {
      if (route.config?.idempotency)
        throw new Error(`route ${String(route.method)} ${route.url} declares idempotency, which only authenticated POST routes take`);
      return;
    }
    route.preHandler = [...hooks(route.preHandler), claimKey];
    route.onSend = [...hooks(route.onSend), captureResponse];
  });
}
