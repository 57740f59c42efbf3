import { connectionOnboard, connectionOnboardingDeadline } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { ConnectionsService } from './connections.service.ts';

export function connectionsJobs(service: ConnectionsService): JobRegistration[] {
  return [
    handleJob(connectionOnboard, (payload) => service.requestHistory(payload.connection_id)),
    handleJob(connectionOnboardingDeadline, (payload) => service.onboardingDeadline(payload.connection_id)),
  ];
}
