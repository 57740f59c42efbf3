/**
 * Members: the people of an organization and their roles (owner, admin, agent, viewer). A member is
 * a user's place in one organization; the `users` table (email, password hash) is internal to this
 * module and never exposed as a resource. Owns role changes, removal and leaving (other modules
 * register what a removal undoes with `onRemoved`), and the transfer of ownership.
 */
import type { Module } from '../module.ts';
import { registerMembersRoutes } from './members.routes.ts';
import { createMembersService, type MembersService, type MembersServiceDeps } from './members.service.ts';
import { createMembersStore } from './members.store.ts';

export function createMembersModule(deps: Omit<MembersServiceDeps, 'store'>): Module<MembersService> {
  const service = createMembersService({ ...deps, store: createMembersStore() });
  return { name: 'members', service, routes: (server) => registerMembersRoutes(server, service) };
}

export type { MemberRemovalListener, MemberRole, MembersService } from './members.service.ts';
export type { Member } from './members.schemas.ts';
