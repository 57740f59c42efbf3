import type { Principal } from '../modules/credentials/principal.ts';
import type { HttpServer } from './server.ts';

/** What the HTTP layer tells usage of each answered request; the usage module answers it. */
export interface RequestMeter {
  countRequest(principal: Principal): void;
}

/**
 * Counts every answered request that passed authentication (`api_requests`), except the rate
 * limiter's refusals (no work was done) and a test key's (test traffic is not usage). In
 * `onResponse`, so that nothing of it is on the answer's path.
 */
export function registerRequestMeter(app: HttpServer, meter: RequestMeter): void {
  app.addHook('onResponse', (request, reply, done) => {
    const { principal } = request;
    if (principal && principal.mode !== 'test' && reply.statusCode !== 429) meter.countRequest(principal);
    done();
  });
}
