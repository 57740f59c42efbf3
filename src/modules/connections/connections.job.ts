import { connectionOnboard, connectionOnboardingDeadline } from '../../jobs/catalog.ts';
import type { Worker } from '../../jobs/worker.ts';
import type { ConnectionsService } from './connections.service.ts';

export function registerConnectionsJobs(worker: Worker, service: ConnectionsService): void {
  worker.register(connectionOnboard, (payload) => service.requestHistory(payload.connection_id));
  worker.register(connectionOnboardingDeadline, (payload) => service.onboardingDeadline(payload.connection_id));
}
