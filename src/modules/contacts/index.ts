/**
 * Contacts: the customers an organization talks to, one live contact per E.164 number, shared by
 * all of the organization's connections. Owns the /v1/contacts endpoints, the marketing consent
 * (every opt-in and opt-out kept, the latest deciding), soft deletion (messages and conversations
 * keep their contact), and the contact behind each inbound message, created on a number's first one.
 */
import type { Module } from '../module.ts';
import { registerContactsRoutes } from './contacts.routes.ts';
import { createContactsService, type ContactsService, type ContactsServiceDeps } from './contacts.service.ts';
import { createContactsStore } from './contacts.store.ts';

export function createContactsModule(deps: Omit<ContactsServiceDeps, 'store'>): Module<ContactsService> {
  const service = createContactsService({ ...deps, store: createContactsStore() });
  return { name: 'contacts', service, routes: (server) => registerContactsRoutes(server, service) };
}

export type { ContactsService } from './contacts.service.ts';
export type { Contact } from './contacts.schemas.ts';
