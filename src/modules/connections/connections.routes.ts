import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { ConnectBody, ConnectionListQuery, ConnectionListSchema, ConnectionSchema, ReauthoriseBody, UpdateConnectionBody } from './connections.schemas.ts';
import type { TemplatesService } from '../templates/index.ts';
import type { ConnectionsService } from './connections.service.ts';

const tags = ['Connections'];
const read: Access = { scope: 'connections:read' };
const write: Access = { scope: 'connections:write' };
// A connection key is bound to one existing number: connecting or re-authorising numbers is the organization's business.
const manage: Access = { scope: 'connections:write', credentials: ['dashboard_token', 'organization_key', 'oauth_token'] };

/**
 * The sync endpoint reads the number again (this module) and then its account's templates (the
 * templates module, which is built on this one and so cannot be one of its service's dependencies).
 */
export function registerConnectionsRoutes(app: HttpServer, service: ConnectionsService, templates: Pick<TemplatesService, 'syncConnection'>): void {
  app.get('/v1/connections', {
    config: { access: read },
    schema: { tags, summary: 'List connections', querystring: ConnectionListQuery, response: { 200: ConnectionListSchema } },
    handler: async (request) => {
      const { status, ...list } = request.query;
      return service.list(requirePrincipal(request), { status }, toPageRequest(list));
    },
  });

  app.post('/v1/connections', {
    config: { access: manage, waitsOnNetwork: true },
    schema: { tags, summary: 'Connect a number with a signup code', body: ConnectBody, response: { 201: ConnectionSchema } },
    handler: async (request, reply) =>
      reply.code(201).send(await service.connect({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.get('/v1/connections/:id', {
    config: { access: read },
    schema: { tags, summary: 'Get a connection', params: PathId('connection'), response: { 200: ConnectionSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.patch('/v1/connections/:id', {
    config: { access: write },
    schema: {
      tags,
      summary: "Update a connection's name or metadata",
      params: PathId('connection'),
      body: UpdateConnectionBody,
      response: { 200: ConnectionSchema },
    },
    handler: async (request) => service.update({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });

  app.delete('/v1/connections/:id', {
    config: { access: manage, waitsOnNetwork: true },
    schema: {
      tags,
      summary: 'Disconnect a number (the record stays, as disconnected, with its history)',
      params: PathId('connection'),
      response: { 200: ConnectionSchema },
    },
    handler: async (request) => service.disconnect({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.post('/v1/connections/:id/sync', {
    config: { access: write, waitsOnNetwork: true },
    schema: { tags, summary: "Read the number's state from the provider again", params: PathId('connection'), response: { 200: ConnectionSchema } },
    handler: async (request) => {
      const actor = { principal: requirePrincipal(request), requestId: request.id };
      const connection = await service.sync(actor, request.params.id);
      await templates.syncConnection(actor, connection.id);
      return connection;
    },
  });

  app.post('/v1/connections/:id/reauthorise', {
    config: { access: manage, waitsOnNetwork: true },
    schema: {
      tags,
      summary: 'Re-authorise a connection with a new signup code',
      params: PathId('connection'),
      body: ReauthoriseBody,
      response: { 200: ConnectionSchema },
    },
    handler: async (request) => service.reauthorise({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });
}
