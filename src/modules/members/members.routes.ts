import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { MemberListQuery, MemberListSchema, MemberSchema } from './members.schemas.ts';
import type { MembersService } from './members.service.ts';

/** Membership is managed in the dashboard by owners and admins. */
const access: Access = { scope: null, credentials: ['dashboard_token'], roles: ['owner', 'admin'] };

export function registerMembersRoutes(app: HttpServer, service: MembersService): void {
  app.get('/v1/members', {
    config: { access },
    schema: { tags: ['Members'], summary: 'List members', querystring: MemberListQuery, response: { 200: MemberListSchema } },
    handler: async (request) => {
      const { role, ...list } = request.query;
      return service.list(requirePrincipal(request).organizationId, { role }, toPageRequest(list));
    },
  });

  app.get('/v1/members/:id', {
    config: { access },
    schema: { tags: ['Members'], summary: 'Get a member', params: PathId('member'), response: { 200: MemberSchema } },
    handler: async (request) => service.get(requirePrincipal(request).organizationId, request.params.id),
  });
}
