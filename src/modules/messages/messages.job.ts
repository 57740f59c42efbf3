import { messageSend } from '../../jobs/catalog.ts';
import type { Worker } from '../../jobs/worker.ts';
import type { SendingService } from './sending.service.ts';

export function registerMessagesJobs(worker: Worker, sending: SendingService): void {
  worker.register(messageSend, (payload, context) => sending.deliver(payload.message_id, context));
}
