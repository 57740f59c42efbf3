import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { DeletedResponse, PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { MemberListQuery, MemberListSchema, MemberSchema, TransferOwnershipBody, UpdateMemberBody } from './members.schemas.ts';
import type { MembersService } from './members.service.ts';

/**
 * Every member sees who else is in the organization (the inbox names assignees and lock holders to
 * agents and viewers too); membership is managed by owners and admins.
 */
const readAccess: Access = { scope: null, credentials: ['dashboard_token'] };
const access: Access = { scope: null, credentials: ['dashboard_token'], roles: ['owner', 'admin'] };
/** Anyone may leave; whom else a member may remove is the service's rule (only those they outrank). */
const removeAccess: Access = { scope: null, credentials: ['dashboard_token'] };
const ownerAccess: Access = { scope: null, credentials: ['dashboard_token'], roles: ['owner'] };

export function registerMembersRoutes(app: HttpServer, service: MembersService): void {
  app.get('/v1/members', {
    config: { access: readAccess },
    schema: { tags: ['Members'], summary: 'List members', querystring: MemberListQuery, response: { 200: MemberListSchema } },
    handler: async (request) => {
      const { role, ...list } = request.query;
      return service.list(requirePrincipal(request).organizationId, { role }, toPageRequest(list));
    },
  });

  app.get('/v1/members/:id', {
    config: { access: readAccess },
    schema: { tags: ['Members'], summary: 'Get a member', params: PathId('member'), response: { 200: MemberSchema } },
    handler: async (request) => service.get(requirePrincipal(request).organizationId, request.params.id),
  });

  app.patch('/v1/members/:id', {
    config: { access },
    schema: {
      tags: ['Members'],
      summary: "Change a member's role",
      description: 'Only for members below you, and only to a role below your own. Takes effect on their next request.',
      params: PathId('member'),
      body: UpdateMemberBody,
      response: { 200: MemberSchema },
    },
    handler: async (request) => service.changeRole({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body.role),
  });

  app.delete('/v1/members/:id', {
    config: { access: removeAccess },
    schema: {
      tags: ['Members'],
      summary: 'Remove a member, or leave',
      description:
        "Your own id leaves the organization (not the owner). Another member's id removes them, if you outrank them. Their sessions end, their locks are released and their conversations unassigned.",
      params: PathId('member'),
      response: { 200: DeletedResponse('member') },
    },
    handler: async (request) => service.remove({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.post('/v1/organization/transfer-ownership', {
    config: { access: ownerAccess },
    schema: {
      tags: ['Members'],
      summary: 'Transfer ownership to another member',
      description: 'You become an admin. Needs a sign-in within the last 10 minutes, or your password.',
      body: TransferOwnershipBody,
      response: { 200: MemberSchema },
    },
    handler: async (request) => service.transferOwnership({ principal: requirePrincipal(request), requestId: request.id }, request.body),
  });
}
