/** Identity (`GET /v1/identity`): tells a caller who it is. Reads only; owns no table. */
import type { Module } from '../module.ts';
import type { MembersService } from '../members/index.ts';
import type { OrganizationsService } from '../organizations/index.ts';
import { registerIdentityRoutes } from './identity.routes.ts';

export function createIdentityModule(deps: { organizations: Pick<OrganizationsService, 'get'>; members: Pick<MembersService, 'find'> }): Module {
  return { name: 'identity', service: undefined, routes: (server) => registerIdentityRoutes(server, deps) };
}
