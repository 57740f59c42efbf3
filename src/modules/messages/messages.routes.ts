import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { MessageListQuery, MessageListSchema, MessageSchema, ReactBody, SendMessageBody } from './messages.schemas.ts';
import type { MessagesService } from './messages.service.ts';
import type { SendingService } from './sending.service.ts';

const tags = ['Messages'];
const read: Access = { scope: 'messages:read' };
const write: Access = { scope: 'messages:write' };

export function registerMessagesRoutes(app: HttpServer, service: MessagesService, sending: SendingService): void {
  app.post('/v1/messages', {
    config: { access: write, idempotency: 'required' },
    schema: {
      tags,
      summary: 'Send a message',
      description: 'Stores the message (`queued`) and answers at once; the provider is called by a queued job, and `message.sent` and `message.status` follow.',
      body: SendMessageBody,
      response: { 201: MessageSchema },
    },
    handler: async (request, reply) => reply.code(201).send(await sending.send({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.get('/v1/messages', {
    config: { access: read, nativeJson: true },
    schema: { tags, summary: 'List messages', querystring: MessageListQuery, response: { 200: MessageListSchema } },
    handler: async (request) => {
      const { conversation_id: conversationId, contact_id: contactId, connection_id: connectionId, direction, status, ...list } = request.query;
      return service.list(requirePrincipal(request), { conversationId, contactId, connectionId, direction, status }, toPageRequest(list));
    },
  });

  app.get('/v1/messages/:id', {
    config: { access: read, nativeJson: true },
    schema: { tags, summary: 'Get a message', params: PathId('message'), response: { 200: MessageSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.post('/v1/messages/:id/read', {
    config: { access: write, waitsOnNetwork: true },
    schema: { tags, summary: "Mark a customer's message read", params: PathId('message'), response: { 200: MessageSchema } },
    handler: async (request) => service.markRead(requirePrincipal(request), request.params.id),
  });

  app.post('/v1/messages/:id/typing', {
    config: { access: write, waitsOnNetwork: true },
    schema: { tags, summary: 'Show a typing indicator in answer to a customer’s message', params: PathId('message'), response: { 200: MessageSchema } },
    handler: async (request) => service.showTyping(requirePrincipal(request), request.params.id),
  });

  app.post('/v1/messages/:id/reactions', {
    config: { access: write, idempotency: 'required' },
    schema: { tags, summary: 'React to a message', params: PathId('message'), body: ReactBody, response: { 201: MessageSchema } },
    handler: async (request, reply) =>
      reply.code(201).send(await sending.react({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body)),
  });
}
