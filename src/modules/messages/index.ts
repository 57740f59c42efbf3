/**
 * Messages: what a number and a customer said to each other, each filed into its conversation.
 * Inbound messages, imported history and delivery statuses arrive from the provider's webhooks;
 * sending and the /v1/messages endpoints arrive with the messaging core.
 */
import { createMessagesService, type MessagesServiceDeps } from './messages.service.ts';
import { createMessagesStore } from './messages.store.ts';

export function createMessagesModule(deps: Omit<MessagesServiceDeps, 'store'>) {
  return { service: createMessagesService({ ...deps, store: createMessagesStore() }) };
}

export type { MessagesService } from './messages.service.ts';
export type { Message } from './messages.schemas.ts';
