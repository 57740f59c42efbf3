import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { DeletedResponse, PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import {
  ContactConsentListQuery,
  ContactConsentListSchema,
  ContactListQuery,
  ContactListSchema,
  ContactSchema,
  ContactWindowQuery,
  ContactWindowSchema,
  CreateContactBody,
  MergeContactBody,
  RecordConsentBody,
  UpdateContactBody,
} from './contacts.schemas.ts';
import type { ContactsService } from './contacts.service.ts';

const tags = ['Contacts'];
const read: Access = { scope: 'contacts:read' };
const write: Access = { scope: 'contacts:write' };

export function registerContactsRoutes(app: HttpServer, service: ContactsService): void {
  app.get('/v1/contacts', {
    config: { access: read, nativeJson: true },
    schema: { tags, summary: 'List contacts', querystring: ContactListQuery, response: { 200: ContactListSchema } },
    handler: async (request) => {
      const { phone_number: phoneNumber, ...list } = request.query;
      // A `+` sent unencoded in a query string arrives as a space.
      return service.list(requirePrincipal(request), { phoneNumber: phoneNumber?.replace(/^ /, '+') }, toPageRequest(list));
    },
  });

  app.post('/v1/contacts', {
    config: { access: write },
    schema: { tags, summary: 'Create a contact', body: CreateContactBody, response: { 201: ContactSchema } },
    handler: async (request, reply) =>
      reply.code(201).send(await service.create({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.get('/v1/contacts/:id', {
    config: { access: read, nativeJson: true },
    schema: { tags, summary: 'Get a contact', params: PathId('contact'), response: { 200: ContactSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.patch('/v1/contacts/:id', {
    config: { access: write },
    schema: {
      tags,
      summary: "Update a contact's name, email or metadata",
      params: PathId('contact'),
      body: UpdateContactBody,
      response: { 200: ContactSchema },
    },
    handler: async (request) => service.update({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });

  app.delete('/v1/contacts/:id', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Delete a contact (its number is free for a new one; its opt-out is remembered)',
      params: PathId('contact'),
      response: { 200: DeletedResponse('contact') },
    },
    handler: async (request) => service.delete({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.post('/v1/contacts/:id/merge', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Merge another contact into this one: its conversations, messages and consent records move here, and it is deleted',
      params: PathId('contact'),
      body: MergeContactBody,
      response: { 200: ContactSchema },
    },
    handler: async (request) => service.merge({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });

  app.get('/v1/contacts/:id/window', {
    config: { access: read },
    schema: {
      tags,
      summary: 'The 24-hour customer service window with one connection: whether free-form messages may be sent, and until when',
      params: PathId('contact'),
      querystring: ContactWindowQuery,
      response: { 200: ContactWindowSchema },
    },
    handler: async (request) => service.window(requirePrincipal(request), request.params.id, request.query.connection_id),
  });

  app.post('/v1/contacts/:id/consent', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Record an opt-in or opt-out; answers the contact',
      params: PathId('contact'),
      body: RecordConsentBody,
      response: { 200: ContactSchema },
    },
    handler: async (request) => service.recordConsent({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });

  app.get('/v1/contacts/:id/consent', {
    config: { access: read },
    schema: {
      tags,
      summary: "A contact's consent records, every one kept",
      params: PathId('contact'),
      querystring: ContactConsentListQuery,
      response: { 200: ContactConsentListSchema },
    },
    handler: async (request) => service.listConsents(requirePrincipal(request), request.params.id, toPageRequest(request.query)),
  });
}
