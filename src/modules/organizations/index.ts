/**
 * Organizations: the tenant. Every other record belongs to exactly one, and every query is scoped
 * by its id. Created at sign-up; read through `/v1/identity`; its name, settings and metadata
 * changed by its owners and admins with `PATCH /v1/organization`.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { Module } from '../module.ts';
import { registerOrganizationsRoutes } from './organizations.routes.ts';
import { createOrganizationsService, type OrganizationsService } from './organizations.service.ts';
import { createOrganizationsStore } from './organizations.store.ts';

export function createOrganizationsModule(deps: { db: Db; clock: Clock; audit: Pick<AuditEventsService, 'record'> }): Module<OrganizationsService> {
  const service = createOrganizationsService({ ...deps, store: createOrganizationsStore() });
  return { name: 'organizations', service, routes: (server) => registerOrganizationsRoutes(server, service) };
}

export type { OrganizationsService } from './organizations.service.ts';
