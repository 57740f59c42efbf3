import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * For signed webhooks (the provider's, Stripe's): the signature covers the exact bytes sent, so a
 * scope that takes them keeps the body as received, whatever its content type, and parses it only
 * once the signature holds. Call on an encapsulated scope (`app.register(async (scope) => …)`): it
 * replaces that scope's parsers, no one else's.
 */
export function keepRawBodies(scope: Pick<FastifyInstance, 'removeAllContentTypeParsers' | 'addContentTypeParser'>, bodyLimit: number): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => done(null, body));
}

/** The bytes a `keepRawBodies` scope kept (empty when the request had no body). */
export function rawBodyOf(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

/** A header sent once, as text; undefined when absent (or repeated, which no signing scheme sends). */
export function singleHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}
