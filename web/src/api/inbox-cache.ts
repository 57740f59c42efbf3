import type { InfiniteData, QueryClient } from '@tanstack/react-query';
import type { Contact } from '../../../src/modules/contacts/contacts.schemas.ts';
import type { Conversation, ConversationState } from '../../../src/modules/conversations/conversations.schemas.ts';
import type { Message } from '../../../src/modules/messages/messages.schemas.ts';
import { queryKeys } from './keys.ts';
import type { ListPage } from './types.ts';

/**
 * What the inbox keeps in the query cache, and the one way to change it, for the pages (after their
 * own writes) and the live stream (after everyone else's) alike:
 *
 * - `queryKeys.conversationList(filters)`: pages of conversations in the inbox's order (`sort=recent`),
 *   with `contact` and `last_message` expanded;
 * - `queryKeys.conversation(id)`: one conversation, with `contact` and `last_message` expanded;
 * - `queryKeys.messages(conversationId)`: pages of its messages, newest first (the API's order).
 *
 * A write that answers a conversation without its expansions (a PATCH, an event) keeps the ones
 * the cache holds: `upsertConversation` merges.
 */
export type { Contact, Conversation, ConversationState, Message };
export type Pages<T> = InfiniteData<ListPage<T>, string | null>;

/** The list filters the API takes, as the inbox asks for them (`assignee` is a member id or `none`). */
export interface ConversationFilters {
  state?: ConversationState;
  assignee?: string;
  tag?: string;
  window?: 'open' | 'closed';
}

export const WINDOW_MS = 24 * 60 * 60 * 1000;

/** The API's `sort=recent`: latest activity first (a thread of imported history only counts from its creation), then id. */
export function compareRecent(a: Conversation, b: Conversation): number {
  const x = a.last_message_at ?? a.created_at;
  const y = b.last_message_at ?? b.created_at;
  if (x !== y) return x > y ? -1 : 1;
  return a.id === b.id ? 0 : a.id > b.id ? -1 : 1;
}

export function windowOpen(conversation: Pick<Conversation, 'window_expires_at'>, now = Date.now()): boolean {
  return conversation.window_expires_at !== null && Date.parse(conversation.window_expires_at) > now;
}

/** The API's filters, applied here to a conversation that changed, to know which lists it belongs in. */
export function matchesFilters(conversation: Conversation, filters: ConversationFilters): boolean {
  if (filters.state && conversation.state !== filters.state) return false;
  if (filters.assignee && conversation.assignee_id !== (filters.assignee === 'none' ? null : filters.assignee)) return false;
  if (filters.tag && !conversation.tags.includes(filters.tag)) return false;
  if (filters.window && windowOpen(conversation) !== (filters.window === 'open')) return false;
  return true;
}

/**
 * Unread (the inbox's rule, docs/dashboard.md): the customer wrote last and nobody has marked it
 * read yet. Marking read is the provider's read receipt, so "read" is one fact for the organization.
 */
export function isUnread(conversation: Conversation): boolean {
  const last = conversation.last_message;
  return Boolean(last && last.direction === 'inbound' && last.status === 'received');
}

/** A status only moves forward (docs/messages.md#status); `failed` ends a message not yet read. */
const STATUS_RANK: Record<Message['status'], number> = { received: 0, queued: 0, sent: 1, delivered: 2, failed: 2.5, read: 3 };

/** The fresher of two copies of one message: a later write, or on the same instant the further status. */
export function fresher(a: Message, b: Message): Message {
  if (a.updated_at !== b.updated_at) return a.updated_at > b.updated_at ? a : b;
  return STATUS_RANK[b.status] >= STATUS_RANK[a.status] ? b : a;
}

function later(a: string | null, b: string): string {
  return a !== null && a > b ? a : b;
}

/** A conversation after `message` was filed in it: what the server moved in the same transaction. */
export function withMessage(conversation: Conversation, message: Message): Conversation {
  const last = conversation.last_message;
  const next: Conversation = { ...conversation };
  if (!last || message.id > last.id) next.last_message = message;
  else if (message.id === last.id) next.last_message = fresher(last, message);
  if (message.imported) return next;
  // As the server counts them: a customer's (or echoed) message from when it was sent, ours from when it was stored.
  const at = message.direction === 'inbound' || message.echo ? (message.sent_at ?? message.created_at) : message.created_at;
  next.last_message_at = later(conversation.last_message_at, at);
  if (message.direction === 'inbound') {
    next.last_inbound_at = later(conversation.last_inbound_at, at);
    next.window_expires_at = new Date(Date.parse(next.last_inbound_at) + WINDOW_MS).toISOString();
  }
  return next;
}

/**
 * `next` over `known`, keeping the expansions `next` does not carry; a `next` older than `known`
 * (a fetch that left before an event and answered after it) changes nothing but what it adds.
 */
function merge(known: Conversation | undefined, next: Conversation): Conversation {
  if (!known) return next;
  if (known.updated_at > next.updated_at) return { ...known, contact: known.contact ?? next.contact, last_message: known.last_message ?? next.last_message };
  const merged = { ...known, ...next };
  if (next.contact === undefined) merged.contact = known.contact;
  if (next.last_message === undefined) merged.last_message = known.last_message;
  else if (known.last_message && next.last_message && known.last_message.id >= next.last_message.id) {
    merged.last_message = known.last_message.id === next.last_message.id ? fresher(known.last_message, next.last_message) : known.last_message;
  }
  return merged;
}

function listQueries(queryClient: QueryClient) {
  return queryClient.getQueriesData<Pages<Conversation>>({ queryKey: queryKeys.conversations });
}

/** The cache's copy of a conversation, from its own query or any list; undefined when none holds it. */
export function findConversation(queryClient: QueryClient, id: string): Conversation | undefined {
  const own = queryClient.getQueryData<Conversation>(queryKeys.conversation(id));
  if (own) return own;
  for (const [, data] of listQueries(queryClient)) {
    for (const page of data?.pages ?? []) {
      const found = page.data.find((conversation) => conversation.id === id);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * `conversation` moved to where it now belongs in one list: out of it when it no longer matches the
 * filters; otherwise at its place in the order among the loaded pages, or nowhere yet when that
 * place is past them (the next page will bring it).
 */
function place(data: Pages<Conversation>, next: Conversation, filters: ConversationFilters): Pages<Conversation> {
  let known: Conversation | undefined;
  const pages = data.pages.map((page) => {
    const index = page.data.findIndex((conversation) => conversation.id === next.id);
    if (index === -1) return page;
    known = page.data[index];
    return { ...page, data: page.data.toSpliced(index, 1) };
  });
  const merged = merge(known, next);
  if (!matchesFilters(merged, filters) || merged.contact === undefined) return known ? { ...data, pages } : data;
  for (const [pageIndex, page] of pages.entries()) {
    const index = page.data.findIndex((conversation) => compareRecent(merged, conversation) < 0);
    const last = pageIndex === pages.length - 1;
    if (index !== -1 || (last && !page.has_more)) {
      pages[pageIndex] = { ...page, data: page.data.toSpliced(index === -1 ? page.data.length : index, 0, merged) };
      return { ...data, pages };
    }
  }
  return { ...data, pages };
}

/**
 * A conversation as it now is, into its own query and every list. A list only takes in one it did
 * not hold when the conversation carries its contact (`expand=contact`): the row shows who it is.
 */
export function upsertConversation(queryClient: QueryClient, conversation: Conversation): void {
  // The expansions any copy holds travel with it into the lists that did not hold it.
  const full = merge(findConversation(queryClient, conversation.id), conversation);
  queryClient.setQueryData<Conversation>(queryKeys.conversation(conversation.id), (known) => (known ? merge(known, full) : undefined));
  for (const [key] of listQueries(queryClient)) {
    const filters = (key[1] ?? {}) as ConversationFilters;
    queryClient.setQueryData<Pages<Conversation>>(key, (data) => (data ? place(data, full, filters) : data));
  }
}

/** Takes a conversation out of every list and drops its own query (a contact merge folded it away). */
export function removeConversation(queryClient: QueryClient, id: string): void {
  queryClient.removeQueries({ queryKey: queryKeys.conversation(id) });
  for (const [key] of listQueries(queryClient)) {
    queryClient.setQueryData<Pages<Conversation>>(key, (data) =>
      data ? { ...data, pages: data.pages.map((page) => ({ ...page, data: page.data.filter((conversation) => conversation.id !== id) })) } : data,
    );
  }
}

/** A contact changed: every conversation showing it shows the change. */
export function upsertContact(queryClient: QueryClient, contact: Contact): void {
  const update = (conversation: Conversation) => (conversation.contact_id === contact.id ? { ...conversation, contact } : conversation);
  for (const query of queryClient.getQueryCache().findAll({ queryKey: ['conversation'] })) {
    queryClient.setQueryData<Conversation>(query.queryKey, (known) => (known ? update(known) : known));
  }
  for (const [key] of listQueries(queryClient)) {
    queryClient.setQueryData<Pages<Conversation>>(key, (data) =>
      data ? { ...data, pages: data.pages.map((page) => ({ ...page, data: page.data.map(update) })) } : data,
    );
  }
}

/** A message into its thread (newest first): replaced where it is by its fresher copy, or put in its place by id. */
function placeMessage(data: Pages<Message>, message: Message): Pages<Message> {
  for (const [pageIndex, page] of data.pages.entries()) {
    const index = page.data.findIndex((known) => known.id === message.id);
    if (index === -1) continue;
    const kept = fresher(page.data[index]!, message);
    if (kept === page.data[index]) return data;
    return { ...data, pages: data.pages.with(pageIndex, { ...page, data: page.data.with(index, kept) }) };
  }
  for (const [pageIndex, page] of data.pages.entries()) {
    const index = page.data.findIndex((known) => message.id > known.id);
    const last = pageIndex === data.pages.length - 1;
    if (index !== -1 || (last && !page.has_more)) {
      const placed = { ...page, data: page.data.toSpliced(index === -1 ? page.data.length : index, 0, message) };
      return { ...data, pages: data.pages.with(pageIndex, placed) };
    }
  }
  return data;
}

/**
 * A message as it now is, into its thread (when loaded) and into its conversation wherever the
 * cache holds that. Answers false when no cache holds the conversation: the caller fetches it.
 */
export function upsertMessage(queryClient: QueryClient, message: Message): boolean {
  queryClient.setQueryData<Pages<Message>>(queryKeys.messages(message.conversation_id), (data) => (data ? placeMessage(data, message) : data));
  const conversation = findConversation(queryClient, message.conversation_id);
  if (!conversation) return false;
  upsertConversation(queryClient, withMessage(conversation, message));
  return true;
}
