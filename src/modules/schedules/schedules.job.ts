import { scheduleFire } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { SchedulesService } from './schedules.service.ts';

export function schedulesJobs(service: SchedulesService): JobRegistration[] {
  return [handleJob(scheduleFire, (payload) => service.fire(payload))];
}
