import { requirePrincipal, type Access } from '../../http/access.ts';
import type { HttpServer } from '../../http/server.ts';
import { UsageBreakdownQuery, UsageBreakdownSchema, UsageQuery, UsageSchema } from './usage.schemas.ts';
import type { UsageService } from './usage.service.ts';

const access: Access = { scope: 'usage:read' };

export function registerUsageRoutes(app: HttpServer, service: UsageService): void {
  app.get('/v1/usage', {
    config: { access },
    schema: {
      tags: ['Usage'],
      summary: 'Get usage',
      description: "What the organization's live traffic used in a calendar month (UTC), meter by meter, against its plan's limits.",
      querystring: UsageQuery,
      response: { 200: UsageSchema },
    },
    handler: async (request) => service.get(requirePrincipal(request), request.query),
  });

  app.get('/v1/usage/breakdown', {
    config: { access },
    schema: {
      tags: ['Usage'],
      summary: 'Break usage down',
      description: 'One meter over a month, summed per UTC day, number, message category or automation; a paged list in ascending order of the group.',
      querystring: UsageBreakdownQuery,
      response: { 200: UsageBreakdownSchema },
    },
    handler: async (request) => service.breakdown(requirePrincipal(request), request.query),
  });
}
