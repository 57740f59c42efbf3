/**
 * Messages: what a number and a customer said to each other, each filed into its conversation.
 * Inbound messages, imported history and delivery statuses arrive from the provider's webhooks;
 * the /v1/messages read endpoints list and get them (a message is visible when its connection is);
 * sending arrives with the messaging core.
 */
import type { HttpServer } from '../../http/server.ts';
import { registerMessagesRoutes } from './messages.routes.ts';
import { createMessagesService, type MessagesServiceDeps } from './messages.service.ts';
import { createMessagesStore } from './messages.store.ts';

export function createMessagesModule(deps: Omit<MessagesServiceDeps, 'store'>) {
  const service = createMessagesService({ ...deps, store: createMessagesStore() });
  return { service, registerRoutes: (app: HttpServer) => registerMessagesRoutes(app, service) };
}

export type { MessagesService } from './messages.service.ts';
export type { Message } from './messages.schemas.ts';
