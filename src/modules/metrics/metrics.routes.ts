import type { HttpServer } from '../../http/server.ts';
import { constantTimeEqual } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { UNMATCHED_ROUTE, type MetricsService } from './metrics.service.ts';

export const METRICS_PATH = '/metrics';

/**
 * `GET /metrics`, and the hook that measures every other request. The route is public to the access
 * layer, whose credentials are the API's: it checks its own token, the whole header compared in
 * constant time. A scraper calls it every few seconds, from one address, so it is never rate limited.
 */
export function registerMetricsRoutes(server: HttpServer, service: Pick<MetricsService, 'httpRequest' | 'scrape' | 'contentType'>, token: string): void {
  const expected = `Bearer ${token}`;

  // After the answer is sent, so it adds nothing to the request's own latency; a callback rather
  // than an async function, which would cost a promise per request.
  server.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url;
    if (route !== METRICS_PATH) service.httpRequest(request.method, route ?? UNMATCHED_ROUTE, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  server.get(METRICS_PATH, {
    config: {
      access: {
        public: true,
        reason: 'Scraped by Prometheus; exists only when METRICS_TOKEN is set, and asks for that token itself (`Authorization: Bearer <METRICS_TOKEN>`).',
        rateLimit: false,
      },
    },
    schema: { hide: true },
    handler: async (request, reply) => {
      const header = request.headers.authorization;
      if (header === undefined) throw new AppError('credential_missing', 'Send the metrics token in the Authorization header: `Bearer <METRICS_TOKEN>`.');
      if (!constantTimeEqual(header, expected)) throw new AppError('credential_invalid', 'The Authorization header is not `Bearer <METRICS_TOKEN>`.');
      const text = await service.scrape();
      return reply.type(service.contentType).send(text);
    },
  });
}
