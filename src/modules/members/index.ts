/**
 * Members: the people of an organization and their roles (owner, admin, agent, viewer). A member is
 * a user's place in one organization; the `users` table (email, password hash) is internal to this
 * module and never exposed as a resource.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Module } from '../module.ts';
import { registerMembersRoutes } from './members.routes.ts';
import { createMembersService, type MembersService } from './members.service.ts';
import { createMembersStore } from './members.store.ts';

export function createMembersModule(deps: { db: Db; clock: Clock; isUniqueViolation: (error: unknown) => boolean }): Module<MembersService> {
  const service = createMembersService({ ...deps, store: createMembersStore() });
  return { name: 'members', service, routes: (server) => registerMembersRoutes(server, service) };
}

export type { MembersService } from './members.service.ts';
