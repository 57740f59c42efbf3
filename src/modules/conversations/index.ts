/**
 * Conversations: the thread between one connected number and one contact, which every message
 * between them belongs to. Owns the 24-hour customer service window of each thread (open while the
 * customer's last message is less than a day old), the `conversation.window_expiring` timer an hour
 * before it closes, and folding threads together when contacts merge. The /v1/conversations
 * endpoints arrive with the conversations issue.
 */
import type { Db } from '../../db/connect.ts';
import type { EventEmitter } from '../../events/emit.ts';
import { conversationWindowExpiring } from '../../jobs/catalog.ts';
import type { Queue } from '../../jobs/queue.ts';
import type { Worker } from '../../jobs/worker.ts';
import type { Clock } from '../../lib/clock.ts';
import { createConversationsService } from './conversations.service.ts';
import { createConversationsStore } from './conversations.store.ts';

export function createConversationsModule(deps: { db: Db; clock: Clock; events: EventEmitter; queue: Queue }) {
  const service = createConversationsService({ ...deps, store: createConversationsStore() });
  return {
    service,
    registerJobs: (worker: Worker) => worker.register(conversationWindowExpiring, (payload) => service.warnWindowExpiring(payload.conversation_id, payload.expires_at)),
  };
}

export type { ConversationsService, Window } from './conversations.service.ts';
export { WINDOW_MS, WINDOW_WARNING_MS } from './conversations.service.ts';
export type { Conversation } from './conversations.schemas.ts';
