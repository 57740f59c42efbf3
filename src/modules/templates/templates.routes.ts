import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { DeletedResponse, PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { CreateTemplateBody, SyncTemplatesBody, TemplateListQuery, TemplateListSchema, TemplateSchema, TemplateSyncSchema } from './templates.schemas.ts';
import type { TemplatesService } from './templates.service.ts';

const tags = ['Templates'];
const read: Access = { scope: 'templates:read' };
const write: Access = { scope: 'templates:write' };

export function registerTemplatesRoutes(app: HttpServer, service: TemplatesService): void {
  app.get('/v1/templates', {
    config: { access: read },
    schema: { tags, summary: 'List templates', querystring: TemplateListQuery, response: { 200: TemplateListSchema } },
    handler: async (request) => {
      const { connection_id: connectionId, status, name, language, category, ...list } = request.query;
      return service.list(requirePrincipal(request), { connectionId, status, name, language, category }, toPageRequest(list));
    },
  });

  app.post('/v1/templates', {
    config: { access: write, waitsOnNetwork: true },
    schema: { tags, summary: 'Create a template: submitted to the provider for review', body: CreateTemplateBody, response: { 201: TemplateSchema } },
    handler: async (request, reply) =>
      reply.code(201).send(await service.create({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.post('/v1/templates/sync', {
    config: { access: write, waitsOnNetwork: true },
    schema: { tags, summary: "Read a connection's templates from the provider again", body: SyncTemplatesBody, response: { 200: TemplateSyncSchema } },
    handler: async (request) => service.syncConnection({ principal: requirePrincipal(request), requestId: request.id }, request.body.connection_id),
  });

  app.get('/v1/templates/:id', {
    config: { access: read },
    schema: { tags, summary: 'Get a template', params: PathId('template'), response: { 200: TemplateSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.delete('/v1/templates/:id', {
    config: { access: write, waitsOnNetwork: true },
    schema: {
      tags,
      summary: 'Delete a template at the provider (this language); the record stays, `deleted`',
      params: PathId('template'),
      response: { 200: DeletedResponse('template') },
    },
    handler: async (request) => service.delete({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });
}
