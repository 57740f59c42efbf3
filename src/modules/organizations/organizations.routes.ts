import { requirePrincipal, type Access } from '../../http/access.ts';
import type { HttpServer } from '../../http/server.ts';
import { OrganizationSchema, UpdateOrganizationBody } from './organizations.schemas.ts';
import type { OrganizationsService } from './organizations.service.ts';

// The organization's own settings are its administrators' to change, from the dashboard.
const manage: Access = { scope: null, credentials: ['dashboard_token'], roles: ['owner', 'admin'] };

export function registerOrganizationsRoutes(app: HttpServer, service: OrganizationsService): void {
  app.patch('/v1/organization', {
    config: { access: manage },
    schema: {
      tags: ['Organization'],
      summary: 'Change your organization: its name, settings and metadata',
      body: UpdateOrganizationBody,
      response: { 200: OrganizationSchema },
    },
    handler: async (request) => service.update({ principal: requirePrincipal(request), requestId: request.id }, request.body),
  });
}
