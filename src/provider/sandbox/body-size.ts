import type { FastifyError, FastifyRequest } from 'fastify';
import { discardRequestBody } from '../../lib/request-body.ts';

/**
 * How much of a body refused as too large the sandbox still reads (and throws away) before it
 * answers, so that the client finishes its upload and then reads the 413 rather than a reset
 * connection. Far beyond any honest mistake on the 1 MB endpoints; a body declared or sent larger
 * than this is answered at once, and the connection closes under the rest.
 */
export const DISCARDED_BODY_LIMIT_BYTES = 64 * 1024 * 1024;

export function isBodyTooLarge(error: FastifyError | Error): boolean {
  return 'code' in error && error.code === 'FST_ERR_CTP_BODY_TOO_LARGE';
}

/** Waits for the rest of a body refused as too large (up to `DISCARDED_BODY_LIMIT_BYTES`), unread. */
export async function discardRefusedBody(request: FastifyRequest): Promise<void> {
  await discardRequestBody(request.raw, DISCARDED_BODY_LIMIT_BYTES);
}

export function bodyTooLargeMessage(request: FastifyRequest): string {
  return `The request body is larger than the ${request.routeOptions.bodyLimit} bytes this endpoint takes.`;
}
