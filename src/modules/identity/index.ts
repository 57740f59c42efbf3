/** Identity (`GET /v1/identity`): tells a caller who it is. Reads only; owns no table. */
import type { HttpServer } from '../../http/server.ts';
import type { MembersService } from '../members/index.ts';
import type { OrganizationsService } from '../organizations/index.ts';
import { registerIdentityRoutes } from './identity.routes.ts';

export function createIdentityModule(deps: { organizations: OrganizationsService; members: MembersService }) {
  return { registerRoutes: (app: HttpServer) => registerIdentityRoutes(app, deps) };
}
