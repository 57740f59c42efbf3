import { conversationLockExpire } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { ConversationLocksService } from './conversation-locks.service.ts';

export function conversationLocksJobs(service: ConversationLocksService): JobRegistration[] {
  return [handleJob(conversationLockExpire, (payload) => service.expire(payload.lock_id, payload.ends_at))];
}
