import { conversationLockExpire } from '../../jobs/catalog.ts';
import type { Worker } from '../../jobs/worker.ts';
import type { ConversationLocksService } from './conversation-locks.service.ts';

export function registerConversationLocksJobs(worker: Worker, service: ConversationLocksService): void {
  worker.register(conversationLockExpire, (payload) => service.expire(payload.lock_id, payload.ends_at));
}
