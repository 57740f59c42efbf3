import { requirePrincipal } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { ConnectionListQuery, ConnectionListSchema, ConnectionSchema, UpdateConnectionBody } from './connections.schemas.ts';
import type { ConnectionsService } from './connections.service.ts';

export function registerConnectionsRoutes(app: HttpServer, service: ConnectionsService): void {
  app.get('/v1/connections', {
    config: { access: { scope: 'connections:read' } },
    schema: { tags: ['Connections'], summary: 'List connections', querystring: ConnectionListQuery, response: { 200: ConnectionListSchema } },
    handler: async (request) => {
      const { status, ...list } = request.query;
      return service.list(requirePrincipal(request), { status }, toPageRequest(list));
    },
  });

  app.get('/v1/connections/:id', {
    config: { access: { scope: 'connections:read' } },
    schema: { tags: ['Connections'], summary: 'Get a connection', params: PathId('connection'), response: { 200: ConnectionSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.patch('/v1/connections/:id', {
    config: { access: { scope: 'connections:write' } },
    schema: {
      tags: ['Connections'],
      summary: "Update a connection's name or metadata",
      params: PathId('connection'),
      body: UpdateConnectionBody,
      response: { 200: ConnectionSchema },
    },
    handler: async (request) => service.update({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });
}
