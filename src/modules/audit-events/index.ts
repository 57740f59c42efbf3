/**
 * The audit log (the API's "Events" resource, `/v1/events`): an append-only record of every change
 * made through the API or the dashboard, written in the same transaction as the change itself.
 * Not to be confused with the outbound webhook events of `src/events/`.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Module } from '../module.ts';
import { registerAuditEventsRoutes } from './audit-events.routes.ts';
import { createAuditEventsService, type AuditEventsService } from './audit-events.service.ts';
import { createAuditEventsStore } from './audit-events.store.ts';

export function createAuditEventsModule(deps: { db: Db; clock: Clock }): Module<AuditEventsService> {
  const service = createAuditEventsService({ ...deps, store: createAuditEventsStore() });
  return { name: 'audit-events', service, routes: (server) => registerAuditEventsRoutes(server, service) };
}

export type { AuditEventsService, SystemActor } from './audit-events.service.ts';
