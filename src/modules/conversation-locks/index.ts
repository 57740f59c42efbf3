/**
 * Conversation locks: a lease one member holds on a conversation so that two people do not answer
 * the same customer at once. Owns the /v1/conversations/{id}/lock endpoints (acquire or renew,
 * release, transfer, request a handover), the timers that end a lease at its TTL or when its holder
 * goes idle, the `conversation.lock_changed` and `conversation.lock_requested` events, and the check
 * the send pipeline makes (`assertMaySend`) so that nobody but the holder writes into a locked one.
 */
import type { HttpServer } from '../../http/server.ts';
import type { Worker } from '../../jobs/worker.ts';
import { registerConversationLocksJobs } from './conversation-locks.job.ts';
import { registerConversationLocksRoutes } from './conversation-locks.routes.ts';
import { createConversationLocksService, type ConversationLocksServiceDeps } from './conversation-locks.service.ts';
import { createConversationLocksStore } from './conversation-locks.store.ts';

export function createConversationLocksModule(deps: Omit<ConversationLocksServiceDeps, 'store'>) {
  const service = createConversationLocksService({ ...deps, store: createConversationLocksStore() });
  return {
    service,
    registerRoutes: (app: HttpServer) => registerConversationLocksRoutes(app, service),
    registerJobs: (worker: Worker) => registerConversationLocksJobs(worker, service),
  };
}

export type { ConversationLocksService } from './conversation-locks.service.ts';
export type { ConversationLock } from './conversation-locks.schemas.ts';
