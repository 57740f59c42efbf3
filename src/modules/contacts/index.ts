/**
 * Contacts: the customers an organization talks to, one per E.164 number. Inbound messages from a
 * new number create one. The /v1/contacts endpoints arrive with the messaging core.
 */
import type { Clock } from '../../lib/clock.ts';
import type { EventEmitter } from '../../events/emit.ts';
import { createContactsService } from './contacts.service.ts';
import { createContactsStore } from './contacts.store.ts';

export function createContactsModule(deps: { clock: Clock; events: EventEmitter }) {
  return { service: createContactsService({ ...deps, store: createContactsStore() }) };
}

export type { ContactsService } from './contacts.service.ts';
export type { Contact } from './contacts.schemas.ts';
