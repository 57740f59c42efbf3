import type { Db } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ContactConsentsTable, ContactsTable } from '../../db/schema.ts';
import { changedAttributes } from '../../events/envelope.ts';
import type { EventEmitter } from '../../events/emit.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { mergeMetadata } from '../../lib/metadata.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import {
  type ConsentState,
  type ConsentStatus,
  type ConsentTopic,
  type Contact,
  type ContactConsent,
  type CreateContactInput,
  type RecordConsentInput,
  type UpdateContactInput,
} from './contacts.schemas.ts';
import type { ContactChanges, ContactsStore } from './contacts.store.ts';

function toContact(row: ContactsTable): Contact {
  return {
    id: row.id,
    object: 'contact',
    phone_number: row.phone_number,
    name: row.name,
    email: row.email,
    profile_name: row.profile_name,
    consent: {
      marketing: { status: row.marketing_consent as ConsentState, since: row.marketing_consent_since, source: row.marketing_consent_source },
    },
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function toConsent(row: ContactConsentsTable): ContactConsent {
  return {
    id: row.id,
    object: 'contact_consent',
    contact_id: row.contact_id,
    topic: row.topic as ConsentTopic,
    status: row.status as ConsentStatus,
    source: row.source,
    recorded_at: row.recorded_at,
    created_at: row.created_at,
  };
}

export interface ContactsServiceDeps {
  db: Db;
  store: ContactsStore;
  clock: Clock;
  events: EventEmitter;
  audit: AuditEventsService;
}

export function createContactsService(deps: ContactsServiceDeps) {
  const { db, store, clock, events, audit } = deps;

  async function getRow(executor: Db, principal: Principal, id: string): Promise<ContactsTable> {
    const row = await store.find(executor, principal.organizationId, id);
    if (!row) throw notFound('contact');
    return row;
  }

  async function lockRow(trx: Db, principal: Principal, id: string): Promise<ContactsTable> {
    const row = await store.lock(trx, principal.organizationId, id);
    if (!row) throw notFound('contact');
    return row;
  }

  /**
   * A new contact for a number: fields as given, and the opt-out of the number's last deleted contact
   * if it had one, so deleting a contact never makes a number that opted out reachable again. The
   * row is inserted only if no live contact holds the number; answers null when one does.
   */
  async function insertNew(trx: Db, input: { organizationId: string; phoneNumber: string; name: string | null; email: string | null; profileName: string | null; metadata: Record<string, unknown> }): Promise<ContactsTable | null> {
    const now = clock.now();
    const deleted = await store.findLastDeleted(trx, input.organizationId, input.phoneNumber);
    const optedOut = deleted?.marketing_consent === 'opted_out' ? deleted : undefined;
    const row: ContactsTable = {
      id: newId('contact', now.getTime()),
      organization_id: input.organizationId,
      phone_number: input.phoneNumber,
      name: input.name,
      email: input.email,
      profile_name: input.profileName,
      metadata: JSON.stringify(input.metadata),
      last_inbound_at: null,
      marketing_consent: optedOut ? 'opted_out' : 'unknown',
      marketing_consent_since: optedOut?.marketing_consent_since ?? null,
      marketing_consent_source: optedOut?.marketing_consent_source ?? null,
      deleted_at: null,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    };
    if (!(await store.insertIfAbsent(trx, row))) return null;
    if (optedOut) {
      // The history explains the status it starts with.
      await store.insertConsent(trx, {
        id: newId('contactConsent', now.getTime()),
        organization_id: row.organization_id,
        contact_id: row.id,
        topic: 'marketing',
        status: 'opted_out',
        source: optedOut.marketing_consent_source ?? 'carried_over',
        recorded_at: optedOut.marketing_consent_since ?? now.toISOString(),
        created_at: now.toISOString(),
      });
    }
    return row;
  }

  return {
    async create(actor: Actor, input: CreateContactInput): Promise<Contact> {
      const { organizationId } = actor.principal;
      return db.transaction().execute(async (trx) => {
        const row = await insertNew(trx, {
          organizationId, phoneNumber: input.phone_number, name: input.name ?? null, email: input.email ?? null, profileName: null, metadata: input.metadata ?? {},
        });
        if (!row) {
          const existing = await store.findByPhoneNumber(trx, organizationId, input.phone_number);
          throw new AppError('resource_exists', `A contact with this phone number exists${existing ? `: ${existing.id}` : ''}.`, { param: '/phone_number' });
        }
        const contact = toContact(row);
        await audit.record(trx, actor, { action: 'contact.created', target: { type: 'contact', id: row.id }, data: { phone_number: row.phone_number } });
        await events.emit(trx, { type: 'contact.created', organizationId, connectionId: null, object: contact });
        return contact;
      });
    },

    async get(principal: Principal, id: string): Promise<Contact> {
      return toContact(await getRow(db, principal, id));
    },

    async list(principal: Principal, filters: { phoneNumber?: string | undefined }, page: PageRequest): Promise<Page<Contact>> {
      return mapPage(await store.list(db, principal.organizationId, filters, page), toContact);
    },

    /** Changes what was sent; a request that changes nothing writes nothing and emits nothing. */
    async update(actor: Actor, id: string, input: UpdateContactInput): Promise<Contact> {
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        const metadata = mergeMetadata(row.metadata, input.metadata);
        const changes: ContactChanges = {
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.email !== undefined ? { email: input.email } : {}),
          metadata,
        };
        const before = toContact(row);
        const changed = changedAttributes(before, toContact({ ...row, ...changes }));
        if (Object.keys(changed).length === 0) return before;

        const next = { ...row, ...changes, updated_at: clock.now().toISOString() };
        await store.update(trx, id, { ...changes, updated_at: next.updated_at });
        const after = toContact(next);
        await audit.record(trx, actor, { action: 'contact.updated', target: { type: 'contact', id }, data: { fields: Object.keys(changed) } });
        await events.emit(trx, {
          type: 'contact.updated', organizationId: row.organization_id, connectionId: null, object: after,
          previousAttributes: changedAttributes(before, after),
        });
        return after;
      });
    },

    /**
     * Deletes softly: messages and conversations keep pointing at the row, which is hidden from
     * every read and frees its number. What identifies the person beyond the number is erased; the
     * consent history stays, as the evidence it is.
     */
    async delete(actor: Actor, id: string): Promise<{ id: string; object: 'contact'; deleted: true }> {
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        const now = clock.now().toISOString();
        await store.update(trx, id, { deleted_at: now, updated_at: now, name: null, email: null, profile_name: null, metadata: '{}' });
        await audit.record(trx, actor, { action: 'contact.deleted', target: { type: 'contact', id }, data: { phone_number: row.phone_number } });
        return { id, object: 'contact' as const, deleted: true as const };
      });
    },

    /**
     * Records an opt-in or opt-out. Every record is kept; the topic's status is that of its latest
     * record by `recorded_at`, so a record dated before the latest one is history only. The status
     * changing is `contact.consent_changed`.
     */
    async recordConsent(actor: Actor, id: string, input: RecordConsentInput): Promise<Contact> {
      const now = clock.now();
      const recordedAt = input.recorded_at === undefined ? now : new Date(input.recorded_at);
      if (recordedAt.getTime() > now.getTime()) throw invalidParam('/recorded_at', 'must not be in the future');
      const topic = input.topic ?? 'marketing';
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        const record: ContactConsentsTable = {
          id: newId('contactConsent', now.getTime()),
          organization_id: row.organization_id,
          contact_id: id,
          topic,
          status: input.status,
          source: input.source,
          recorded_at: recordedAt.toISOString(),
          created_at: now.toISOString(),
        };
        await store.insertConsent(trx, record);
        const latest = await store.findLatestConsent(trx, id, topic);
        const changed = latest?.id === record.id && row.marketing_consent !== record.status;
        await audit.record(trx, actor, {
          action: 'contact.consent_recorded',
          target: { type: 'contact', id },
          data: { consent_id: record.id, topic, status: record.status, source: record.source, recorded_at: record.recorded_at, changed },
        });
        if (!changed) return toContact(row);

        const next: ContactsTable = {
          ...row, marketing_consent: record.status, marketing_consent_since: record.recorded_at, marketing_consent_source: record.source, updated_at: now.toISOString(),
        };
        await store.update(trx, id, {
          marketing_consent: next.marketing_consent, marketing_consent_since: next.marketing_consent_since,
          marketing_consent_source: next.marketing_consent_source, updated_at: next.updated_at,
        });
        const contact = toContact(next);
        await events.emit(trx, { type: 'contact.consent_changed', organizationId: row.organization_id, connectionId: null, object: contact });
        return contact;
      });
    },

    async listConsents(principal: Principal, id: string, page: PageRequest): Promise<Page<ContactConsent>> {
      await getRow(db, principal, id);
      return mapPage(await store.listConsents(db, id, page), toConsent);
    },

    /**
     * The contact behind a customer who wrote in, created on their first message (`contact.created`);
     * a new profile name is recorded (`contact.updated`). A number whose contact was deleted gets a
     * new contact. `connectionId` only labels the events.
     */
    async findOrCreateForInbound(trx: Db, input: { organizationId: string; connectionId: string; waId: string; profileName: string | undefined; at: Date }): Promise<Contact> {
      const phoneNumber = `+${input.waId}`;
      // Most messages come from known customers: one read, and nothing else unless the name changed.
      const existing = await store.findByPhoneNumber(trx, input.organizationId, phoneNumber);
      const created = existing ? null : await insertNew(trx, {
        organizationId: input.organizationId, phoneNumber, name: null, email: null, profileName: input.profileName ?? null, metadata: {},
      });
      if (created) {
        const contact = toContact(created);
        await events.emit(trx, { type: 'contact.created', organizationId: input.organizationId, connectionId: input.connectionId, object: contact });
        return contact;
      }
      // Either known, or created by a concurrent message between the read and the insert.
      const row = existing ?? (await store.findByPhoneNumber(trx, input.organizationId, phoneNumber))!;
      if (input.profileName === undefined || input.profileName === row.profile_name) return toContact(row);
      const now = clock.now().toISOString();
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
