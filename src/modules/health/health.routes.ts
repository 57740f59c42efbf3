import Type from 'typebox';
import { AppError } from '../../lib/errors.ts';
import type { HttpServer } from '../../http/server.ts';

const access = { public: true as const, reason: 'Probed by load balancers and orchestrators.', rateLimit: false as const };
const Status = Type.Object({ status: Type.String() });

export function registerHealthRoutes(app: HttpServer, isReady: () => Promise<boolean>): void {
  app.get('/healthz', {
    config: { access },
    schema: { tags: ['Operations'], summary: 'The process is up', response: { 200: Status } },
    handler: async () => ({ status: 'ok' }),
  });

  app.get('/readyz', {
    config: { access },
    schema: { tags: ['Operations'], summary: 'The store is reachable and migrated, and the media storage can be written', response: { 200: Status } },
    handler: async () => {
      if (!(await isReady())) throw new AppError('service_unavailable', 'The store is unreachable or not migrated, or the media storage cannot be reached.');
      return { status: 'ready' };
    },
  });
}
