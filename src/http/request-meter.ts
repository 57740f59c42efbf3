import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../modules/credentials/principal.ts';
import type { HttpServer } from './server.ts';

/** What the HTTP layer tells usage of each answered request; the usage module answers it. */
export interface RequestMeter {
  countRequest(principal: Principal): void;
}

function isStream(payload: unknown): boolean {
  return typeof payload === 'object' && payload !== null && typeof (payload as { pipe?: unknown }).pipe === 'function';
}

/**
 * Counts every answered request that passed authentication (`api_requests`), except the rate
 * limiter's refusals (no work was done) and a test key's (test traffic is not usage). In
 * `onResponse`, so that nothing of it is on the answer's path. A streamed answer (the live stream, a
 * media download) that its client leaves before the end never reaches `onResponse`: it is counted
 * when its connection closes instead, so each request is counted once however it ends.
 */
export function registerRequestMeter(app: HttpServer, meter: RequestMeter): void {
  const count = (request: FastifyRequest, reply: FastifyReply) => {
    const { principal } = request;
    if (principal && principal.mode !== 'test' && reply.statusCode !== 429) meter.countRequest(principal);
  };
  app.addHook('onResponse', (request, reply, done) => {
    count(request, reply);
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (isStream(payload)) reply.raw.once('close', () => reply.raw.writableFinished || count(request, reply));
    done(null, payload);
  });
}
