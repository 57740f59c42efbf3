import type { Db } from '../../db/connect.ts';
import type { ContactsTable } from '../../db/schema.ts';
import { changedAttributes } from '../../events/envelope.ts';
import type { EventEmitter } from '../../events/emit.ts';
import type { Clock } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import type { Contact } from './contacts.schemas.ts';
import type { ContactsStore } from './contacts.store.ts';

function toContact(row: ContactsTable): Contact {
  return {
    id: row.id,
    object: 'contact',
    phone_number: row.phone_number,
    name: row.name,
    profile_name: row.profile_name,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function createContactsService(deps: { store: ContactsStore; clock: Clock; events: EventEmitter }) {
  const { store, clock, events } = deps;
  return {
    /**
     * The contact behind a customer who wrote in, created on their first message (`contact.created`);
     * a new profile name is recorded (`contact.updated`). `connectionId` only labels the events.
     */
    async findOrCreateForInbound(trx: Db, input: { organizationId: string; connectionId: string; waId: string; profileName: string | undefined; at: Date }): Promise<Contact> {
      const phoneNumber = `+${input.waId}`;
      const now = clock.now().toISOString();
      const fresh: ContactsTable = {
        id: newId('contact', clock.now().getTime()),
        organization_id: input.organizationId,
        phone_number: phoneNumber,
        name: null,
        profile_name: input.profileName ?? null,
        metadata: '{}',
        last_inbound_at: null,
        created_at: now,
        updated_at: now,
      };
      if (await store.insertIfAbsent(trx, fresh)) {
        const contact = toContact(fresh);
        await events.emit(trx, { type: 'contact.created', organizationId: input.organizationId, connectionId: input.connectionId, object: contact });
        return contact;
      }
      const row = (await store.findByPhoneNumber(trx, input.organizationId, phoneNumber))!;
      if (input.profileName === undefined || input.profileName === row.profile_name) return toContact(row);
      const before = toContact(row);
      const after = toContact({ ...row, profile_name: input.profileName, updated_at: now });
      await store.update(trx, row.id, { profile_name: input.profileName, updated_at: now });
      await events.emit(trx, {
        type: 'contact.updated', organizationId: input.organizationId, connectionId: input.connectionId, object: after,
        previousAttributes: changedAttributes(before, after),
      });
      return after;
    },
  };
}

export type ContactsService = ReturnType<typeof createContactsService>;
