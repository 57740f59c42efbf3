import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { AuditEventListQuery, AuditEventListSchema, AuditEventSchema } from './audit-events.schemas.ts';
import type { AuditEventsService } from './audit-events.service.ts';

/** The audit log is for the organization's owners and admins, in the dashboard. */
const access: Access = { scope: null, credentials: ['dashboard_token'], roles: ['owner', 'admin'] };

export function registerAuditEventsRoutes(app: HttpServer, service: AuditEventsService): void {
  app.get('/v1/events', {
    config: { access },
    schema: { tags: ['Events'], summary: 'List audit events', querystring: AuditEventListQuery, response: { 200: AuditEventListSchema } },
    handler: async (request) => {
      const { action, target_id, ...list } = request.query;
      return service.list(requirePrincipal(request).organizationId, { action, targetId: target_id }, toPageRequest(list));
    },
  });

  app.get('/v1/events/:id', {
    config: { access },
    schema: { tags: ['Events'], summary: 'Get an audit event', params: PathId('auditEvent'), response: { 200: AuditEventSchema } },
    handler: async (request) => service.get(requirePrincipal(request).organizationId, request.params.id),
  });
}
