import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ContactConsentsTable, ContactsTable } from '../../db/schema.ts';
import { changedAttributes } from '../../events/envelope.ts';
import type { EventSink } from '../../events/emit.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { mergeMetadata, METADATA_MAX_KEYS } from '../../lib/metadata.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { ConversationsService } from '../conversations/index.ts';
import { connectionScopeOf, type Actor, type Principal } from '../credentials/principal.ts';
import {
  type ConsentState,
  type ConsentStatus,
  type ConsentTopic,
  type Contact,
  type ContactConsent,
  type ContactWindow,
  type CreateContactInput,
  type DeletedContact,
  type MergeContactInput,
  type RecordConsentInput,
  type UpdateContactInput,
} from './contacts.schemas.ts';
import type { ContactChanges, ContactsStore } from './contacts.store.ts';

export function toContact(row: ContactsTable): Contact {
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

/** The contact as the `contact.updated` that deletes it shows it, and as it was just before. */
function deletion(
  before: ContactsTable,
  after: ContactsTable,
  mergedInto: string | null,
): { object: DeletedContact; previousAttributes: Record<string, unknown> } {
  const object: DeletedContact = { ...toContact(after), deleted: true, merged_into: mergedInto };
  return { object, previousAttributes: changedAttributes({ ...toContact(before), deleted: false, merged_into: null }, object) };
}

/** What deleting erases: everything that identified the person beyond the number. */
const ERASED = { name: null, email: null, profile_name: null, metadata: '{}' } as const;

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
  events: EventSink;
  audit: Pick<AuditEventsService, 'record'>;
  conversations: Pick<ConversationsService, 'latestWindow' | 'mergeContact' | 'windowOf'>;
  connections: Pick<ConnectionsService, 'getForReference'>;
}

export function createContactsService(deps: ContactsServiceDeps) {
  const { db, store, clock, events, audit, conversations, connections } = deps;

  /** `param` names the field that held the id when it is not the path's own. */
  const missing = (id: string, param: string | undefined) =>
    param ? new AppError('resource_not_found', `No such contact: ${id}.`, { param }) : notFound('contact');

  async function getRow(executor: Db, principal: Principal, id: string, param?: string): Promise<ContactsTable> {
    const row = await store.find(executor, principal.organizationId, id);
    if (!row) throw missing(id, param);
    return row;
  }

  async function lockRow(trx: Trx, principal: Principal, id: string, param?: string): Promise<ContactsTable> {
    const row = await store.lock(trx, principal.organizationId, id);
    if (!row) throw missing(id, param);
    return row;
  }

  /**
   * A new contact for a number: fields as given, and the opt-out of the number's last deleted contact
   * if it had one, so deleting a contact never makes a number that opted out reachable again. The
   * row is inserted only if no live contact holds the number; answers null when one does.
   */
  async function insertNew(
    trx: Trx,
    input: {
      organizationId: string;
      phoneNumber: string;
      name: string | null;
      email: string | null;
      profileName: string | null;
      metadata: Record<string, unknown>;
    },
  ): Promise<ContactsTable | null> {
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

  /**
   * Deletes softly: messages and conversations keep pointing at the row, which is hidden from every
   * read and frees its number. What identifies the person beyond the number is erased; the consent
   * summary stays, so that a number that opted out stays opted out (see `insertNew`). With no
   * `contact.deleted` in the catalogue, receivers learn of it from a `contact.updated` with `deleted: true`.
   */
  async function softDelete(trx: Trx, actor: Actor, row: ContactsTable, mergedInto: string | null): Promise<void> {
    const now = clock.now().toISOString();
    const changes = { ...ERASED, deleted_at: now, updated_at: now };
    await store.update(trx, row.id, changes);
    await audit.record(trx, actor, {
      action: 'contact.deleted',
      target: { type: 'contact', id: row.id },
      data: { phone_number: row.phone_number, ...(mergedInto ? { merged_into: mergedInto } : {}) },
    });
    const { object, previousAttributes } = deletion(row, { ...row, ...changes }, mergedInto);
    await events.emit(trx, { type: 'contact.updated', organizationId: row.organization_id, connectionId: null, object, previousAttributes });
  }

  return {
    async create(actor: Actor, input: CreateContactInput): Promise<Contact> {
      const { organizationId } = actor.principal;
      return db.transaction().execute(async (trx) => {
        const row = await insertNew(trx, {
          organizationId,
          phoneNumber: input.phone_number,
          name: input.name ?? null,
          email: input.email ?? null,
          profileName: null,
          metadata: input.metadata ?? {},
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

    /** For other modules that take a `contact_id` in a body: `param` names the field in errors. */
    async getForReference(executor: Db, principal: Principal, id: string, param: string): Promise<Contact> {
      return toContact(await getRow(executor, principal, id, param));
    },

    /**
     * As `getForReference`, holding the contact until the transaction ends: a message filed under it
     * waits for a merge or a delete in progress, and a deleted contact is not found.
     */
    async lockForReference(trx: Trx, principal: Principal, id: string, param: string): Promise<Contact> {
      return toContact(await lockRow(trx, principal, id, param));
    },

    async findByPhoneNumber(executor: Db, organizationId: string, phoneNumber: string): Promise<Contact | undefined> {
      const row = await store.findByPhoneNumber(executor, organizationId, phoneNumber);
      return row && toContact(row);
    },

    /**
     * The live contacts among many recipients named by id or by number (a batch), by id and by number.
     * An id of another organization, or of a deleted contact, is simply absent.
     */
    async findRecipients(
      executor: Db,
      organizationId: string,
      among: { ids: readonly string[]; phoneNumbers: readonly string[] },
    ): Promise<{ byId: Map<string, Contact>; byPhoneNumber: Map<string, Contact> }> {
      const contacts = (await store.findLiveAmong(executor, organizationId, among)).map(toContact);
      return {
        byId: new Map(contacts.map((contact) => [contact.id, contact])),
        byPhoneNumber: new Map(contacts.map((contact) => [contact.phone_number, contact])),
      };
    },

    /** Live contacts by id, in one query (for `expand=contact`); ids that do not resolve are absent. */
    async findMany(principal: Principal, ids: readonly string[]): Promise<Map<string, Contact>> {
      const rows = ids.length === 0 ? [] : await store.findMany(db, principal.organizationId, ids);
      return new Map(rows.map((row) => [row.id, toContact(row)]));
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
          type: 'contact.updated',
          organizationId: row.organization_id,
          connectionId: null,
          object: after,
          previousAttributes: changedAttributes(before, after),
        });
        return after;
      });
    },

    async delete(actor: Actor, id: string): Promise<{ id: string; object: 'contact'; deleted: true }> {
      return db.transaction().execute(async (trx) => {
        await softDelete(trx, actor, await lockRow(trx, actor.principal, id), null);
        return { id, object: 'contact' as const, deleted: true as const };
      });
    },

    /**
     * Merges the source contact into this one, which survives: the source's conversations (folded
     * into this one's on a connection where both have one), messages and consent records move here,
     * and the source is deleted as `delete` does. This contact keeps its own fields, filling those it
     * lacks from the source; metadata is combined, this contact's keys winning. The consent summary
     * is the merged history's latest record's.
     */
    async merge(actor: Actor, id: string, input: MergeContactInput): Promise<Contact> {
      const sourceId = input.source_contact_id;
      if (sourceId === id) throw invalidParam('/source_contact_id', 'must be another contact than the one it is merged into');
      return db.transaction().execute(async (trx) => {
        // Always in id order, so two merges of one pair, either way round, cannot deadlock. Every
        // inbound message locks its contact first too: none can join the source while it moves.
        const params: Record<string, string> = { [id]: '/path/id', [sourceId]: '/source_contact_id' };
        const locked = new Map<string, ContactsTable>();
        for (const each of [id, sourceId].sort()) locked.set(each, await lockRow(trx, actor.principal, each, params[each]));
        const survivor = locked.get(id)!;
        const source = locked.get(sourceId)!;
        const metadata = { ...(JSON.parse(source.metadata) as Record<string, unknown>), ...(JSON.parse(survivor.metadata) as Record<string, unknown>) };
        if (Object.keys(metadata).length > METADATA_MAX_KEYS) {
          throw invalidParam(
            '/source_contact_id',
            `cannot be merged: the two contacts' metadata would hold more than ${METADATA_MAX_KEYS} keys; remove some from one of them first`,
            'too_many',
          );
        }

        const moved = await conversations.mergeContact(trx, { organizationId: survivor.organization_id, sourceContactId: sourceId, survivorContactId: id });
        const consentsMoved = await store.moveConsents(trx, sourceId, id);
        const latest = await store.findLatestConsent(trx, id, 'marketing');
        const status = latest?.status ?? 'unknown';
        // Each contact's summary already describes its own latest record: the one whose record won is kept whole.
        const consent =
          status === survivor.marketing_consent
            ? survivor
            : status === source.marketing_consent
              ? source
              : { marketing_consent: status, marketing_consent_since: latest?.recorded_at ?? null, marketing_consent_source: latest?.source ?? null };
        const changes = {
          name: survivor.name ?? source.name,
          email: survivor.email ?? source.email,
          profile_name: survivor.profile_name ?? source.profile_name,
          metadata: JSON.stringify(metadata),
          marketing_consent: consent.marketing_consent,
          marketing_consent_since: consent.marketing_consent_since,
          marketing_consent_source: consent.marketing_consent_source,
          updated_at: clock.now().toISOString(),
        } satisfies ContactChanges;
        await store.update(trx, id, changes);
        await softDelete(trx, actor, source, id);

        const before = toContact(survivor);
        const after = toContact({ ...survivor, ...changes });
        // Even when no field changed the merge is announced: the contact's history grew.
        const previousAttributes = changedAttributes(before, after);
        await audit.record(trx, actor, {
          action: 'contact.merged',
          target: { type: 'contact', id },
          data: {
            source_contact_id: sourceId,
            fields: Object.keys(previousAttributes).filter((field) => field !== 'updated_at'),
            consents_moved: consentsMoved,
            conversations_moved: moved.conversationsMoved,
            conversations_folded: moved.conversationsFolded,
            messages_moved: moved.messagesMoved,
          },
        });
        await events.emit(trx, { type: 'contact.updated', organizationId: survivor.organization_id, connectionId: null, object: after, previousAttributes });
        if (changes.marketing_consent !== survivor.marketing_consent) {
          await events.emit(trx, { type: 'contact.consent_changed', organizationId: survivor.organization_id, connectionId: null, object: after });
        }
        return after;
      });
    },

    /**
     * The 24-hour window with one connection: the one named, else a connection key's own, else the
     * one the contact last wrote to among those the credential sees (test ones only, for a test key).
     */
    async window(principal: Principal, id: string, connectionId: string | undefined): Promise<ContactWindow> {
      const contact = await getRow(db, principal, id);
      if (connectionId !== undefined) await connections.getForReference(db, principal, connectionId, '/query/connection_id');
      const asked = connectionId ?? principal.connectionId;
      const window =
        asked === null
          ? await conversations.latestWindow(db, contact.id, connectionScopeOf(principal))
          : { connectionId: asked, ...(await conversations.windowOf(db, asked, contact.id)) };
      return {
        object: 'window',
        contact_id: contact.id,
        connection_id: window.connectionId,
        open: window.open,
        last_inbound_at: window.lastInboundAt,
        expires_at: window.expiresAt,
      };
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
          ...row,
          marketing_consent: record.status,
          marketing_consent_since: record.recorded_at,
          marketing_consent_source: record.source,
          updated_at: now.toISOString(),
        };
        await store.update(trx, id, {
          marketing_consent: next.marketing_consent,
          marketing_consent_since: next.marketing_consent_since,
          marketing_consent_source: next.marketing_consent_source,
          updated_at: next.updated_at,
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
    async findOrCreateForInbound(
      trx: Trx,
      input: { organizationId: string; connectionId: string; waId: string; profileName: string | undefined; at: Date },
    ): Promise<Contact> {
      const phoneNumber = `+${input.waId}`;
      // Most messages come from known customers: one locking read, and nothing else unless the name
      // changed. The lock makes a merge of this contact wait for the message, or the message wait for
      // the merge, after which the merged-away contact is no longer live and the number gets a new one.
      const existing = await store.lockByPhoneNumber(trx, input.organizationId, phoneNumber);
      const created = existing
        ? null
        : await insertNew(trx, {
            organizationId: input.organizationId,
            phoneNumber,
            name: null,
            email: null,
            profileName: input.profileName ?? null,
            metadata: {},
          });
      if (created) {
        const contact = toContact(created);
        await events.emit(trx, { type: 'contact.created', organizationId: input.organizationId, connectionId: input.connectionId, object: contact });
        return contact;
      }
      // Either known, or created by a concurrent message between the read and the insert.
      const row = existing ?? (await store.lockByPhoneNumber(trx, input.organizationId, phoneNumber))!;
      if (input.profileName === undefined || input.profileName === row.profile_name) return toContact(row);
      const now = clock.now().toISOString();
      const before = toContact(row);
      const after = toContact({ ...row, profile_name: input.profileName, updated_at: now });
      await store.update(trx, row.id, { profile_name: input.profileName, updated_at: now });
      await events.emit(trx, {
        type: 'contact.updated',
        organizationId: input.organizationId,
        connectionId: input.connectionId,
        object: after,
        previousAttributes: changedAttributes(before, after),
      });
      return after;
    },
  };
}

export type ContactsService = ReturnType<typeof createContactsService>;
