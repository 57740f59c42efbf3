import { requirePrincipal, type Access } from '../../http/access.ts';
import { parseExpand } from '../../http/expand.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import {
  AddTagsBody,
  AssignConversationBody,
  ControlConversationBody,
  CONVERSATION_RELATIONS,
  ConversationGetQuery,
  ConversationListQuery,
  ConversationListSchema,
  ConversationSchema,
  TagPath,
  UpdateConversationBody,
} from './conversations.schemas.ts';
import { embedConversationRelations, type ConversationRelations } from './conversation-relations.ts';
import type { ConversationsService } from './conversations.service.ts';

const tags = ['Conversations'];
const read: Access = { scope: 'messages:read' };
const write: Access = { scope: 'messages:write' };
const params = PathId('conversation');
const response = { 200: ConversationSchema };

export function registerConversationsRoutes(app: HttpServer, service: ConversationsService, relations: ConversationRelations): void {
  app.get('/v1/conversations', {
    config: { access: read, nativeJson: true },
    schema: { tags, summary: 'List conversations', querystring: ConversationListQuery, response: { 200: ConversationListSchema } },
    handler: async (request) => {
      const { state, assignee, tag, connection_id: connectionId, contact_id: contactId, window, sort, expand, ...list } = request.query;
      const principal = requirePrincipal(request);
      const relationNames = parseExpand(expand, CONVERSATION_RELATIONS);
      const page = await service.list(principal, { state, assignee, tag, connectionId, contactId, window }, toPageRequest(list), sort);
      return { ...page, data: await embedConversationRelations(principal, page.data, relationNames, relations) };
    },
  });

  app.get('/v1/conversations/:id', {
    config: { access: read, nativeJson: true },
    schema: { tags, summary: 'Get a conversation', params, querystring: ConversationGetQuery, response },
    handler: async (request) => {
      const principal = requirePrincipal(request);
      const relationNames = parseExpand(request.query.expand, CONVERSATION_RELATIONS);
      const [conversation] = await embedConversationRelations(principal, [await service.get(principal, request.params.id)], relationNames, relations);
      return conversation!;
    },
  });

  app.patch('/v1/conversations/:id', {
    config: { access: write },
    schema: { tags, summary: "Change a conversation's state or metadata", params, body: UpdateConversationBody, response },
    handler: async (request) => service.update(requirePrincipal(request), request.params.id, request.body),
  });

  app.post('/v1/conversations/:id/assign', {
    config: { access: write },
    schema: { tags, summary: 'Assign a conversation to a member, or unassign it (null)', params, body: AssignConversationBody, response },
    handler: async (request) => service.assign(requirePrincipal(request), request.params.id, request.body),
  });

  app.post('/v1/conversations/:id/control', {
    config: { access: write },
    schema: { tags, summary: 'Say who answers the conversation now: api, automation, agent or app', params, body: ControlConversationBody, response },
    handler: async (request) => service.setControl(requirePrincipal(request), request.params.id, request.body.control),
  });

  app.post('/v1/conversations/:id/tags', {
    config: { access: write },
    schema: { tags, summary: 'Add tags to a conversation', params, body: AddTagsBody, response },
    handler: async (request) => service.addTags(requirePrincipal(request), request.params.id, request.body),
  });

  app.delete('/v1/conversations/:id/tags/:tag', {
    config: { access: write },
    schema: { tags, summary: 'Remove a tag from a conversation (removing one it does not have changes nothing)', params: TagPath, response },
    handler: async (request) => service.removeTag(requirePrincipal(request), request.params.id, request.params.tag),
  });
}
