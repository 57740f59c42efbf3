/**
 * Organizations: the tenant. Every other record belongs to exactly one, and every query is scoped
 * by its id. Created at sign-up; read through `/v1/identity`.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Module } from '../module.ts';
import { createOrganizationsService, type OrganizationsService } from './organizations.service.ts';
import { createOrganizationsStore } from './organizations.store.ts';

export function createOrganizationsModule(deps: { db: Db; clock: Clock }): Module<OrganizationsService> {
  return { name: 'organizations', service: createOrganizationsService({ ...deps, store: createOrganizationsStore() }) };
}

export type { OrganizationsService } from './organizations.service.ts';
