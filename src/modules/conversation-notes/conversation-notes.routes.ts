import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { CreateNoteBody, NoteListQuery, NoteListSchema, NoteSchema } from './conversation-notes.schemas.ts';
import type { ConversationNotesService } from './conversation-notes.service.ts';

const tags = ['Conversations'];
const read: Access = { scope: 'messages:read' };
const write: Access = { scope: 'messages:write' };
const params = PathId('conversation');

export function registerConversationNotesRoutes(app: HttpServer, service: ConversationNotesService): void {
  app.get('/v1/conversations/:id/notes', {
    config: { access: read },
    schema: { tags, summary: "List a conversation's internal notes", params, querystring: NoteListQuery, response: { 200: NoteListSchema } },
    handler: async (request) => service.list(requirePrincipal(request), request.params.id, toPageRequest(request.query)),
  });

  app.post('/v1/conversations/:id/notes', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Add an internal note to a conversation (never sent to the customer)',
      params,
      body: CreateNoteBody,
      response: { 201: NoteSchema },
    },
    handler: async (request, reply) => reply.code(201).send(await service.create(requirePrincipal(request), request.params.id, request.body)),
  });
}
