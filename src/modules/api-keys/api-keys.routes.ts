import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { parseExpand } from '../../http/expand.ts';
import { API_KEY_RELATIONS, ApiKeyListQuery, ApiKeyListSchema, ApiKeySchema, ApiKeyWithSecretSchema, CreateApiKeyBody } from './api-keys.schemas.ts';
import type { ApiKeysService } from './api-keys.service.ts';

/** Keys are created only in the dashboard, by owners and admins. */
const createAccess: Access = { scope: 'keys:write', credentials: ['dashboard_token'], roles: ['owner', 'admin'] };
/** Managing existing keys may also be automated with an organization key that holds keys:write. */
const manageAccess: Access = { scope: 'keys:write', credentials: ['dashboard_token', 'organization_key'], roles: ['owner', 'admin'] };

export function registerApiKeysRoutes(app: HttpServer, service: ApiKeysService): void {
  app.get('/v1/api-keys', {
    config: { access: manageAccess },
    schema: { tags: ['API keys'], summary: 'List API keys', querystring: ApiKeyListQuery, response: { 200: ApiKeyListSchema } },
    handler: async (request) => {
      const { status, expand, ...list } = request.query;
      return service.list(requirePrincipal(request), { status }, toPageRequest(list), parseExpand(expand, API_KEY_RELATIONS));
    },
  });

  app.post('/v1/api-keys', {
    config: { access: createAccess },
    schema: {
      tags: ['API keys'],
      summary: 'Create an API key (the full key is in this response only)',
      body: CreateApiKeyBody,
      response: { 201: ApiKeyWithSecretSchema },
    },
    handler: async (request, reply) => {
      const key = await service.create({ principal: requirePrincipal(request), requestId: request.id }, request.body);
      return reply.code(201).send(key);
    },
  });

  app.post('/v1/api-keys/:id/revoke', {
    config: { access: manageAccess },
    schema: { tags: ['API keys'], summary: 'Revoke an API key', params: PathId('apiKey'), response: { 200: ApiKeySchema } },
    handler: async (request) => service.revoke({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.post('/v1/api-keys/:id/rotate', {
    config: { access: manageAccess },
    schema: {
      tags: ['API keys'],
      summary: 'Replace an API key with a new one (the old one is revoked at once)',
      params: PathId('apiKey'),
      response: { 200: ApiKeyWithSecretSchema },
    },
    handler: async (request) => service.rotate({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });
}
