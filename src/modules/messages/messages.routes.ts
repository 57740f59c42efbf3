import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { MessageListQuery, MessageListSchema, MessageSchema } from './messages.schemas.ts';
import type { MessagesService } from './messages.service.ts';

const tags = ['Messages'];
const read: Access = { scope: 'messages:read' };

export function registerMessagesRoutes(app: HttpServer, service: MessagesService): void {
  app.get('/v1/messages', {
    config: { access: read },
    schema: { tags, summary: 'List messages', querystring: MessageListQuery, response: { 200: MessageListSchema } },
    handler: async (request) => {
      const { conversation_id: conversationId, contact_id: contactId, connection_id: connectionId, direction, status, ...list } = request.query;
      return service.list(requirePrincipal(request), { conversationId, contactId, connectionId, direction, status }, toPageRequest(list));
    },
  });

  app.get('/v1/messages/:id', {
    config: { access: read },
    schema: { tags, summary: 'Get a message', params: PathId('message'), response: { 200: MessageSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });
}
