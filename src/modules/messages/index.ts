/**
 * Messages: what a number and a customer said to each other, each filed into its conversation.
 * Inbound messages, imported history and delivery statuses arrive from the provider's webhooks;
 * sends are stored first and handed to the provider by a queued job (`sending.service.ts`); the
 * /v1/messages endpoints send, list, get, react, mark read and show typing. A message is visible
 * when its connection is.
 */
import type { HttpServer } from '../../http/server.ts';
import type { Worker } from '../../jobs/worker.ts';
import { registerMessagesJobs } from './messages.job.ts';
import { registerMessagesRoutes } from './messages.routes.ts';
import { createMessagesService, type MessagesServiceDeps } from './messages.service.ts';
import { createMessagesStore } from './messages.store.ts';
import { createSendingService, type SendingServiceDeps } from './sending.service.ts';

export function createMessagesModule(deps: Omit<MessagesServiceDeps, 'store'> & Omit<SendingServiceDeps, 'store' | 'messages'>) {
  const store = createMessagesStore();
  const service = createMessagesService({ ...deps, store });
  const sending = createSendingService({ ...deps, store, messages: service });
  return {
    service,
    sending,
    registerRoutes: (app: HttpServer) => registerMessagesRoutes(app, service, sending),
    registerJobs: (worker: Worker) => registerMessagesJobs(worker, sending),
  };
}

export type { MessagesService } from './messages.service.ts';
export type { SendingService } from './sending.service.ts';
export { SEND_TIMEOUT_GRACE_MS } from './sending.service.ts';
export type { Message } from './messages.schemas.ts';
