/**
 * Schedules: occurrences that come due once, on a cron expression in a time zone, or at an interval,
 * each creating what the schedule's target says (notifications; automation runs once automations
 * exist). Owns the /v1/schedules endpoints, the occurrences and their history, and the one fire job
 * queued per schedule, which records an occurrence, has the target create its work and queues the
 * next slot in one transaction. The recurrence rules (next slots, DST, catch-up look-back, words) are
 * pure functions in recurrence.ts. Schedules emit no events of their own: what they create carries
 * `schedule_id` and `occurrence_id`.
 */
import type { Module } from '../module.ts';
import { schedulesJobs } from './schedules.job.ts';
import { registerSchedulesRoutes } from './schedules.routes.ts';
import { createSchedulesService, type SchedulesService, type SchedulesServiceDeps } from './schedules.service.ts';
import { createSchedulesStore } from './schedules.store.ts';

export function createSchedulesModule(deps: Omit<SchedulesServiceDeps, 'store'>): Module<SchedulesService> {
  const service = createSchedulesService({ ...deps, store: createSchedulesStore() });
  return { name: 'schedules', service, routes: (server) => registerSchedulesRoutes(server, service), jobs: schedulesJobs(service) };
}

export type { SchedulesService } from './schedules.service.ts';
export type { Schedule, ScheduleOccurrence } from './schedules.schemas.ts';
