import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ConversationsTable } from '../../db/schema.ts';
import { changedAttributes } from '../../events/envelope.ts';
import type { EventSink } from '../../events/emit.ts';
import { conversationWindowExpiring } from '../../jobs/catalog.ts';
import type { Queue } from '../../jobs/queue.ts';
import { DAY, HOUR, isoDayLater, type Clock } from '../../lib/clock.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { mergeMetadata, METADATA_MAX_KEYS } from '../../lib/metadata.ts';
import { connectionScopeOf, type Principal } from '../credentials/principal.ts';
import type { Member, MembersService } from '../members/index.ts';
import {
  MAX_TAGS,
  type AddTagsInput,
  type AssignConversationInput,
  type Conversation,
  type ConversationControl,
  type ConversationState,
  type UpdateConversationInput,
} from './conversations.schemas.ts';
import type { ConnectionScope } from '../../db/connection-scope.ts';
import type { ConversationSort, ConversationChanges, ConversationsStore } from './conversations.store.ts';

/**
 * The customer service window: free-form messages are allowed this long after the customer's last
 * message. One day, which `expiryOf` counts with `isoDayLater`.
 */
export const WINDOW_MS = DAY;
/** `conversation.window_expiring` comes this long before the window closes. */
export const WINDOW_WARNING_MS = HOUR;

/** The 24-hour window of one number and one customer, as of the service's clock. */
export interface Window {
  open: boolean;
  lastInboundAt: string | null;
  expiresAt: string | null;
}

const expiryOf = (lastInboundAt: string | null): string | null => (lastInboundAt === null ? null : isoDayLater(lastInboundAt));

/** Tags are a set, stored and shown sorted, so that equal sets compare equal in `previous_attributes`. */
const tagSet = (...lists: readonly string[][]): string[] => [...new Set(lists.flat())].sort();
const tagsOf = (row: ConversationsTable) => JSON.parse(row.tags) as string[];

export function toConversation(row: ConversationsTable): Conversation {
  return {
    id: row.id,
    object: 'conversation',
    connection_id: row.connection_id,
    contact_id: row.contact_id,
    state: row.state as ConversationState,
    assignee_id: row.assignee_id,
    control: row.control as ConversationControl,
    tags: tagsOf(row),
    last_message_at: row.last_message_at,
    last_inbound_at: row.last_inbound_at,
    window_expires_at: expiryOf(row.last_inbound_at),
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const later = (a: string | null, b: string | null): string | null => (a === null ? b : b === null ? a : a > b ? a : b);

/**
 * A warning timer is keyed by its closing time: a window pushed back gets a new key (the old timer
 * is cancelled), and a closing time is warned about at most once, however often it is scheduled.
 */
const warningKey = (conversationId: string, expiresAt: string) => `conversation.window_expiring:${conversationId}:${expiresAt}`;

/**
 * What one conversation keeps when a merge folds another into it. The state is the survivor's,
 * unless it is closed and the other's is not: a thread someone is still working on stays in view.
 */
function fold(kept: ConversationsTable, folded: ConversationsTable, now: string): ConversationsTable {
  // Survivor's keys win, as for the contacts themselves; nothing is dropped silently.
  const metadata = { ...(JSON.parse(folded.metadata) as Record<string, unknown>), ...(JSON.parse(kept.metadata) as Record<string, unknown>) };
  if (Object.keys(metadata).length > METADATA_MAX_KEYS) {
    throw invalidParam('/source_contact_id', `cannot be merged: conversation ${kept.id} would hold more than ${METADATA_MAX_KEYS} metadata keys`, 'too_many');
  }
  const tags = tagSet(tagsOf(kept), tagsOf(folded));
  if (tags.length > MAX_TAGS) {
    throw invalidParam('/source_contact_id', `cannot be merged: conversation ${kept.id} would hold more than ${MAX_TAGS} tags; remove some first`, 'too_many');
  }
  const lastInboundAt = later(kept.last_inbound_at, folded.last_inbound_at);
  const expiresAt = expiryOf(lastInboundAt);
  return {
    ...kept,
    state: kept.state === 'closed' && folded.state !== 'closed' ? folded.state : kept.state,
    // Someone who was working on either thread keeps it; the survivor's own choices win.
    assignee_id: kept.assignee_id ?? folded.assignee_id,
    tags: JSON.stringify(tags),
    last_message_at: later(kept.last_message_at, folded.last_message_at),
    last_inbound_at: lastInboundAt,
    metadata: JSON.stringify(metadata),
    // The warning already sent for the window that survives, whichever thread it was sent on.
    window_warning_for: expiresAt !== null && folded.window_warning_for === expiresAt ? expiresAt : kept.window_warning_for,
    updated_at: now,
  };
}

/**
 * Moves what another module keeps per conversation (notes, locks) when a merge folds `from` into
 * `to`: run in the merge's transaction, before `from` is deleted.
 */
export type FoldListener = (trx: Trx, fromConversationId: string, toConversationId: string) => Promise<void>;

export interface ListConversationsFilters {
  state?: ConversationState | undefined;
  /** A member id, or `none`. */
  assignee?: string | undefined;
  tag?: string | undefined;
  connectionId?: string | undefined;
  contactId?: string | undefined;
  window?: 'open' | 'closed' | undefined;
}

export interface ConversationsServiceDeps {
  db: Db;
  store: ConversationsStore;
  clock: Clock;
  events: EventSink;
  queue: Queue;
  members: Pick<MembersService, 'find'>;
}

export function createConversationsService(deps: ConversationsServiceDeps) {
  const { db, store, clock, events, queue, members } = deps;
  // Modules built on this one (notes, locks) register what they move when threads fold together.
  const foldListeners: FoldListener[] = [];

  function windowFrom(lastInboundAt: string | null): Window {
    const expiresAt = expiryOf(lastInboundAt);
    return { open: expiresAt !== null && clock.now().getTime() < Date.parse(expiresAt), lastInboundAt, expiresAt };
  }

  /** Moves the conversation's warning timer from the closing time `from` to the one it now has. */
  async function moveWarning(trx: Trx, row: ConversationsTable, from: string | null): Promise<void> {
    const to = expiryOf(row.last_inbound_at);
    if (to === from) return;
    if (from !== null) await queue.cancel(trx, warningKey(row.id, from));
    // A window that already closed (a late webhook) has nothing to warn about.
    if (to === null || to === row.window_warning_for || Date.parse(to) <= clock.now().getTime()) return;
    await queue.enqueue(
      trx,
      conversationWindowExpiring,
      { conversation_id: row.id, expires_at: to },
      {
        runAt: new Date(Date.parse(to) - WINDOW_WARNING_MS),
        dedupeKey: warningKey(row.id, to),
      },
    );
  }

  async function emitUpdated(trx: Trx, organizationId: string, before: ConversationsTable, after: ConversationsTable): Promise<void> {
    await events.emit(trx, {
      type: 'conversation.updated',
      organizationId,
      connectionId: after.connection_id,
      object: toConversation(after),
      previousAttributes: changedAttributes(toConversation(before), toConversation(after)),
    });
  }

  const missing = (id: string, param: string | undefined) =>
    param ? new AppError('resource_not_found', `No such conversation: ${id}.`, { param }) : notFound('conversation');

  /** For other modules that address a conversation: `param` names the field that held the id, if not the path. */
  async function getForReference(executor: Db, principal: Principal, id: string, param?: string): Promise<Conversation> {
    const row = await store.find(executor, connectionScopeOf(principal), id);
    if (!row) throw missing(id, param);
    return toConversation(row);
  }

  /** A conversation the caller may see, held until the transaction ends; one a merge folded meanwhile is not found. */
  async function lockVisible(trx: Trx, principal: Principal, id: string, param?: string): Promise<ConversationsTable> {
    const row = (await store.find(trx, connectionScopeOf(principal), id)) && (await store.lockById(trx, id));
    if (!row) throw missing(id, param);
    return row;
  }

  /**
   * Writes what changed and announces it; a change that changes nothing writes nothing and emits
   * nothing. `write` does what the change needs beside the row (tag rows), only when it changes.
   */
  async function apply(trx: Trx, row: ConversationsTable, changes: ConversationChanges, write?: () => Promise<void>): Promise<Conversation> {
    const before = toConversation(row);
    if (Object.keys(changedAttributes(before, toConversation({ ...row, ...changes }))).length === 0) return before;
    const next = { ...row, ...changes, updated_at: clock.now().toISOString() };
    await store.update(trx, row.id, { ...changes, updated_at: next.updated_at });
    await write?.();
    await emitUpdated(trx, row.organization_id, row, next);
    return toConversation(next);
  }

  /** One change of a conversation the caller may see, in its own transaction. */
  function change(principal: Principal, id: string, decide: (trx: Trx, row: ConversationsTable) => Promise<Conversation>): Promise<Conversation> {
    return db.transaction().execute(async (trx) => decide(trx, await lockVisible(trx, principal, id)));
  }

  return {
    /** A conversation the caller may see; another organization's, or one of a connection it cannot see, is not found. */
    async get(principal: Principal, id: string): Promise<Conversation> {
      return getForReference(db, principal, id);
    },

    getForReference,

    /** As `getForReference`, holding the conversation until the transaction ends, so that a merge cannot fold it away meanwhile. */
    async lockForReference(trx: Trx, principal: Principal, id: string, param?: string): Promise<Conversation> {
      return toConversation(await lockVisible(trx, principal, id, param));
    },

    /** A filter naming another organization's (or an invisible) object simply matches nothing. */
    async list(principal: Principal, filters: ListConversationsFilters, page: PageRequest, sort: ConversationSort = 'created'): Promise<Page<Conversation>> {
      const { assignee, window, ...rest } = filters;
      return mapPage(
        await store.list(
          db,
          connectionScopeOf(principal),
          {
            ...rest,
            assigneeId: assignee === 'none' ? null : assignee,
            window: window === undefined ? undefined : { open: window === 'open', since: new Date(clock.now().getTime() - WINDOW_MS).toISOString() },
          },
          page,
          sort,
        ),
        toConversation,
      );
    },

    /** `state` replaces; `metadata` is merged (a key sent as null is removed). */
    async update(principal: Principal, id: string, input: UpdateConversationInput): Promise<Conversation> {
      return change(principal, id, (trx, row) =>
        apply(trx, row, {
          ...(input.state !== undefined ? { state: input.state } : {}),
          metadata: mergeMetadata(row.metadata, input.metadata),
        }),
      );
    },

    /** Assigns to an active member of the conversation's organization, or unassigns (null). */
    async assign(principal: Principal, id: string, input: AssignConversationInput): Promise<Conversation> {
      const memberId = input.member_id;
      // The path is checked before the body. Both reads precede the transaction: the members service
      // reads on its own handle, which on SQLite would wait for the one connection a transaction holds.
      await getForReference(db, principal, id);
      if (memberId !== null && !(await members.find(principal.organizationId, memberId))) {
        throw new AppError('resource_not_found', `No such member: ${memberId}.`, { param: '/member_id' });
      }
      return change(principal, id, (trx, row) => apply(trx, row, { assignee_id: memberId }));
    },

    async setControl(principal: Principal, id: string, control: ConversationControl): Promise<Conversation> {
      return change(principal, id, (trx, row) => apply(trx, row, { control }));
    },

    /** Adds tags (a set: those it has stay once); more than MAX_TAGS in all is refused, writing nothing. */
    async addTags(principal: Principal, id: string, input: AddTagsInput): Promise<Conversation> {
      return change(principal, id, async (trx, row) => {
        const tags = tagSet(tagsOf(row), input.tags);
        if (tags.length > MAX_TAGS) {
          throw invalidParam('/tags', `would give the conversation more than ${MAX_TAGS} tags (it has ${tagsOf(row).length}); remove some first`, 'too_many');
        }
        return apply(trx, row, { tags: JSON.stringify(tags) }, () => store.addTags(trx, row.organization_id, row.id, input.tags));
      });
    },

    /** Removes a tag; removing one the conversation does not have changes nothing (DELETE is idempotent). */
    async removeTag(principal: Principal, id: string, tag: string): Promise<Conversation> {
      return change(principal, id, (trx, row) =>
        apply(trx, row, { tags: JSON.stringify(tagsOf(row).filter((each) => each !== tag)) }, () => store.removeTag(trx, row.id, tag)),
      );
    },

    /** For a run, which acts for its organization without a caller: the conversation, held until the transaction ends. */
    async lockForRun(trx: Trx, id: string): Promise<Conversation | undefined> {
      const row = await store.lockById(trx, id);
      return row && toConversation(row);
    },

    /**
     * A run's change of its conversation, in the run's transaction: who answers now, tags added and
     * removed (a set, capped as `addTags` caps it), the assignee (an active member, or null).
     * Answers undefined when the conversation is gone (a merge folded it away).
     */
    async changeForRun(
      trx: Trx,
      id: string,
      change: { control?: ConversationControl; addTags?: readonly string[]; removeTags?: readonly string[]; assigneeId?: string | null },
    ): Promise<Conversation | undefined> {
      const row = await store.lockById(trx, id);
      if (!row) return undefined;
      if (change.assigneeId && !(await members.find(row.organization_id, change.assigneeId))) {
        throw new AppError('resource_not_found', `No such member: ${change.assigneeId}.`, { param: '/member_id' });
      }
      const removed = new Set(change.removeTags ?? []);
      const tags = tagSet(tagsOf(row), [...(change.addTags ?? [])]).filter((tag) => !removed.has(tag));
      if (tags.length > MAX_TAGS) throw invalidParam('/add', `would give the conversation more than ${MAX_TAGS} tags`, 'too_many');
      const changes: ConversationChanges = {
        ...(change.control === undefined ? {} : { control: change.control }),
        ...(change.assigneeId === undefined ? {} : { assignee_id: change.assigneeId }),
        tags: JSON.stringify(tags),
      };
      return apply(trx, row, changes, async () => {
        const before = new Set(tagsOf(row));
        const added = tags.filter((tag) => !before.has(tag));
        if (added.length > 0) await store.addTags(trx, row.organization_id, row.id, added);
        for (const tag of tagsOf(row)) if (!tags.includes(tag)) await store.removeTag(trx, row.id, tag);
      });
    },

    /**
     * The thread of a number and a customer, created (with `conversation.created`) if they have none,
     * without filing a message: a run addresses a customer before anything was said. Moves no clock.
     */
    async openThread(trx: Trx, input: { organizationId: string; connectionId: string; contactId: string }): Promise<Conversation> {
      return this.recordMessage(trx, { ...input, at: clock.now(), inbound: false, imported: true });
    },

    /**
     * The owner answered from the business app (coexistence): the app has the conversation now, so
     * automations and agents stand back until someone takes it again with `/control`.
     */
    async handToApp(trx: Trx, conversationId: string): Promise<void> {
      const row = await store.lockById(trx, conversationId);
      if (row) await apply(trx, row, { control: 'app' });
    },

    /**
     * Files a message into the thread of a number and a customer: the first message creates the
     * thread (`conversation.created`); a customer's message reopens a pending or closed one and moves the
     * window, and with it the warning timer. Imported history moves no clock and reopens nothing.
     * The thread's row is locked, so concurrent messages cannot move its clocks backwards.
     */
    async recordMessage(
      trx: Trx,
      input: { organizationId: string; connectionId: string; contactId: string; at: Date; inbound: boolean; imported: boolean },
    ): Promise<Conversation> {
      const now = clock.now().toISOString();
      const at = input.at.toISOString();
      const fresh: ConversationsTable = {
        id: newId('conversation', clock.now().getTime()),
        organization_id: input.organizationId,
        connection_id: input.connectionId,
        contact_id: input.contactId,
        state: 'open',
        assignee_id: null,
        control: 'api',
        tags: '[]',
        last_message_at: input.imported ? null : at,
        last_inbound_at: input.inbound && !input.imported ? at : null,
        metadata: '{}',
        window_warning_for: null,
        created_at: now,
        updated_at: now,
      };
      // Nearly every message joins a thread that exists: it is read first, and created only when it is
      // not there; a first message that lost the race to a concurrent one reads the winner's row.
      // Imported history moves nothing, so it reads without the lock.
      const readThread = () => (input.imported ? store.findThread : store.lockThread)(trx, input.connectionId, input.contactId);
      const existing = await readThread();
      if (existing === undefined && (await store.insertIfAbsent(trx, fresh))) {
        await moveWarning(trx, fresh, null);
        const conversation = toConversation(fresh);
        await events.emit(trx, { type: 'conversation.created', organizationId: input.organizationId, connectionId: input.connectionId, object: conversation });
        return conversation;
      }
      const row = existing ?? (await readThread())!;
      if (input.imported) return toConversation(row);
      const lastMessageAt = later(row.last_message_at, at);
      const lastInboundAt = input.inbound ? later(row.last_inbound_at, at) : row.last_inbound_at;
      // The customer wrote again: whatever was settled or awaited, someone has to look.
      const state = input.inbound && row.state !== 'open' ? 'open' : row.state;
      // Only the columns that change are written: each indexed one written (even with its old value)
      // rewrites its index entries, and each page they dirty is one more page the commit writes.
      const changes: ConversationChanges = { updated_at: now };
      if (lastMessageAt !== row.last_message_at) changes.last_message_at = lastMessageAt;
      if (lastInboundAt !== row.last_inbound_at) changes.last_inbound_at = lastInboundAt;
      if (state !== row.state) changes.state = state;
      const next = { ...row, ...changes };
      await store.update(trx, row.id, changes);
      await moveWarning(trx, next, expiryOf(row.last_inbound_at));
      // Only the state is a change people act on; the clocks move with every message.
      if (next.state !== row.state) await emitUpdated(trx, input.organizationId, row, next);
      return toConversation(next);
    },

    /**
     * The window of one number and one customer: open while the customer's last message there (not
     * imported history) is less than 24 hours old.
     */
    async windowOf(db: Db, connectionId: string, contactId: string): Promise<Window> {
      return windowFrom((await store.findThread(db, connectionId, contactId))?.last_inbound_at ?? null);
    },

    /** The window on the connection the customer last wrote to, among those the scope sees; null when they never wrote. */
    async latestWindow(db: Db, contactId: string, scope: ConnectionScope): Promise<Window & { connectionId: string | null }> {
      const row = await store.findLatestInbound(db, contactId, scope);
      return { connectionId: row?.connection_id ?? null, ...windowFrom(row?.last_inbound_at ?? null) };
    },

    /**
     * The timer's work: `conversation.window_expiring`, once per closing time. A timer whose window
     * moved (a later message: that closing time's timer warns instead), whose window closed, or whose
     * conversation was folded into another by a merge does nothing.
     */
    async warnWindowExpiring(conversationId: string, expiresAt: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const row = await store.lockById(trx, conversationId);
        if (!row || expiryOf(row.last_inbound_at) !== expiresAt || row.window_warning_for === expiresAt) return;
        if (Date.parse(expiresAt) <= clock.now().getTime()) return;
        // Not a change of the resource: `updated_at` stays.
        await store.update(trx, row.id, { window_warning_for: expiresAt });
        await events.emit(trx, {
          type: 'conversation.window_expiring',
          organizationId: row.organization_id,
          connectionId: row.connection_id,
          object: toConversation(row),
        });
      });
    },

    /** Registers what a module moves when a merge folds one conversation into another (see `mergeContact`). */
    onFold(listener: FoldListener): void {
      foldListeners.push(listener);
    },

    /** A member leaves: what was assigned to them is nobody's (`conversation.updated` for each), in the removal's transaction. */
    async unassignMember(trx: Trx, member: Pick<Member, 'id' | 'organization_id'>): Promise<void> {
      for (const row of await store.lockAssignedTo(trx, member.organization_id, member.id)) await apply(trx, row, { assignee_id: null });
    },

    /**
     * A contact merge: the source contact's conversations become the survivor's. On a connection
     * where both have one, the source's is folded into the survivor's (its messages move, the later
     * clocks are kept, the folded row is deleted); elsewhere the conversation just changes contact.
     * Every conversation that changed gets `conversation.updated`; the folded one simply ends (the
     * catalogue has no `conversation.deleted`). The caller holds both contacts' locks, which every
     * inbound message takes first too, so no message can join a thread while it moves.
     */
    async mergeContact(
      trx: Trx,
      input: { organizationId: string; sourceContactId: string; survivorContactId: string },
    ): Promise<{ conversationsMoved: number; conversationsFolded: number; messagesMoved: number }> {
      const now = clock.now().toISOString();
      const rows = await store.lockOfContacts(trx, [input.sourceContactId, input.survivorContactId]);
      const survivors = new Map(rows.filter((row) => row.contact_id === input.survivorContactId).map((row) => [row.connection_id, row]));
      const counts = { conversationsMoved: 0, conversationsFolded: 0, messagesMoved: 0 };
      for (const source of rows.filter((row) => row.contact_id === input.sourceContactId)) {
        const kept = survivors.get(source.connection_id);
        const target = kept ?? { ...source, contact_id: input.survivorContactId, updated_at: now };
        counts.messagesMoved += await store.moveMessages(trx, source.id, { conversationId: target.id, contactId: input.survivorContactId });
        if (!kept) {
          // Its id, window and warning timer stay: only the contact changes.
          await store.update(trx, source.id, { contact_id: target.contact_id, updated_at: now });
          await emitUpdated(trx, input.organizationId, source, target);
          counts.conversationsMoved++;
          continue;
        }
        const next = fold(kept, source, now);
        // Its tag rows go with its row (on delete cascade); the survivor's are the union.
        await store.addTags(trx, input.organizationId, kept.id, tagsOf(source));
        for (const listener of foldListeners) await listener(trx, source.id, kept.id);
        const sourceExpiry = expiryOf(source.last_inbound_at);
        if (sourceExpiry !== null) await queue.cancel(trx, warningKey(source.id, sourceExpiry));
        await store.delete(trx, source.id);
        await store.update(trx, kept.id, {
          state: next.state,
          assignee_id: next.assignee_id,
          tags: next.tags,
          last_message_at: next.last_message_at,
          last_inbound_at: next.last_inbound_at,
          metadata: next.metadata,
          window_warning_for: next.window_warning_for,
          updated_at: now,
        } satisfies ConversationChanges);
        await moveWarning(trx, next, expiryOf(kept.last_inbound_at));
        await emitUpdated(trx, input.organizationId, kept, next);
        counts.conversationsFolded++;
      }
      return counts;
    },
  };
}

export type ConversationsService = ReturnType<typeof createConversationsService>;
