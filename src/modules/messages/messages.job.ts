import { messageSend } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { SendingService } from './sending.service.ts';

export function messagesJobs(sending: SendingService): JobRegistration[] {
  return [
    handleJob(messageSend, async (payload, context) => {
      await sending.deliver(payload.message_id, context);
    }),
  ];
}
