/**
 * Messages: what a number and a customer said to each other, each filed into its conversation.
 * Inbound messages, imported history and delivery statuses arrive from the provider's webhooks;
 * sends are stored first and handed to the provider by a queued job (`sending.service.ts`); the
 * /v1/messages endpoints send, list, get, react, mark read and show typing. A message is visible
 * when its connection is.
 */
import type { Module } from '../module.ts';
import { messagesJobs } from './messages.job.ts';
import { registerMessagesRoutes } from './messages.routes.ts';
import { createMessagesService, type MessagesService, type MessagesServiceDeps } from './messages.service.ts';
import { createMessagesStore } from './messages.store.ts';
import { createSendChecks, type SendChecksDeps } from './send-checks.ts';
import { createSendingService, type SendingService, type SendingServiceDeps } from './sending.service.ts';

export type MessagesModuleDeps = Omit<MessagesServiceDeps, 'store' | 'provider' | 'contacts' | 'conversations' | 'connections' | 'media'> &
  Omit<SendingServiceDeps, 'store' | 'messages' | 'checks' | 'contacts' | 'conversations' | 'connections' | 'media'> &
  Omit<SendChecksDeps, 'store'> & {
    contacts: MessagesServiceDeps['contacts'] & SendingServiceDeps['contacts'] & SendChecksDeps['contacts'];
    conversations: MessagesServiceDeps['conversations'] & SendingServiceDeps['conversations'] & SendChecksDeps['conversations'];
    connections: MessagesServiceDeps['connections'] & SendingServiceDeps['connections'] & SendChecksDeps['connections'];
    media: MessagesServiceDeps['media'] & SendingServiceDeps['media'] & SendChecksDeps['media'];
    provider: MessagesServiceDeps['provider'] & SendingServiceDeps['provider'];
  };

/** `sending` is also the notification rail's way to file and send its template messages. */
export function createMessagesModule(deps: MessagesModuleDeps): Module<MessagesService> & { sending: SendingService } {
  const store = createMessagesStore();
  const service = createMessagesService({ ...deps, store });
  const sending = createSendingService({ ...deps, store, messages: service, checks: createSendChecks({ ...deps, store }) });
  return { name: 'messages', service, sending, routes: (server) => registerMessagesRoutes(server, service, sending), jobs: messagesJobs(sending) };
}

export type { MessagesService } from './messages.service.ts';
export type { SendingService } from './sending.service.ts';
export { SEND_TIMEOUT_GRACE_MS } from './sending.service.ts';
export type { Message } from './messages.schemas.ts';
