import type { Db } from '../../db/connect.ts';
import type { MessagesTable } from '../../db/schema.ts';
import { AppError, invalidParam } from '../../lib/errors.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { Contact, ContactsService } from '../contacts/index.ts';
import type { ConversationsService } from '../conversations/index.ts';
import type { Principal } from '../credentials/principal.ts';
import type { MediaService } from '../media/index.ts';
import type { TemplatesService } from '../templates/index.ts';
import type { Message, SendMessageInput } from './messages.schemas.ts';
import type { MessagesStore } from './messages.store.ts';
import { assertContentMatchesType, mediaSlotOf, simpleContent, type OutboundContent, type SendRequest } from './outbound.ts';

export interface SendChecksDeps {
  db: Db;
  store: MessagesStore;
  connections: Pick<ConnectionsService, 'getForReference'>;
  contacts: Pick<ContactsService, 'getForReference' | 'findByPhoneNumber'>;
  conversations: Pick<ConversationsService, 'windowOf'>;
  templates: Pick<TemplatesService, 'listApproved' | 'prepareSend'>;
  media: Pick<MediaService, 'assertUsable'>;
}

/**
 * A check another module adds to every send (the plan's hard limit, from usage): it sees the
 * organization and the number's mode, reads only, and refuses by throwing an `AppError`.
 */
export type SendGuard = (executor: Db, send: { organizationId: string; connectionId: string; test: boolean }) => Promise<void>;

/** What a send is about to store, once every check has passed. */
export interface CheckedSend {
  principal: Principal;
  connectionId: string;
  organizationId: string;
  /** Undefined when the recipient is a number without a contact yet: it is created with the message. */
  contact: Contact | undefined;
  phoneNumber: string;
  /** Where the recipient was named: `/contact_id` or `/to`. */
  recipientParam: string;
  request: SendRequest;
  /** The content as the message shows it: the body's own object for its type. */
  shown: unknown;
  type: Message['type'];
  replyTo: MessagesTable | undefined;
  metadata: Record<string, unknown>;
}

/**
 * The first step of a send: everything that can refuse a message, checked before anything is
 * written, each refusal with its code and the JSON pointer of the field at fault. Reads only.
 */
export function createSendChecks(deps: SendChecksDeps) {
  const { db, store, connections, contacts, conversations, templates, media } = deps;
  const guards: SendGuard[] = [];

  async function passGuards(executor: Db, send: Parameters<SendGuard>[1]): Promise<void> {
    for (const guard of guards) await guard(executor, send);
  }

  async function recipientOf(
    principal: Principal,
    input: { contact_id?: string | undefined; to?: string | undefined },
  ): Promise<{ contact: Contact | undefined; phoneNumber: string }> {
    if ((input.contact_id === undefined) === (input.to === undefined)) {
      throw invalidParam(
        input.to === undefined ? '/contact_id' : '/to',
        input.to === undefined ? 'or to is required' : 'cannot be given with contact_id',
        input.to === undefined ? 'required' : 'exclusive',
      );
    }
    if (input.contact_id !== undefined) {
      const contact = await contacts.getForReference(db, principal, input.contact_id, '/contact_id');
      return { contact, phoneNumber: contact.phone_number };
    }
    return { contact: await contacts.findByPhoneNumber(db, principal.organizationId, input.to!), phoneNumber: input.to! };
  }

  /** A message quoted or reacted to must be one of this conversation, and known to the provider. */
  async function targetInThread(
    principal: Principal,
    id: string,
    thread: { connectionId: string; contactId: string | undefined },
    param: string,
  ): Promise<MessagesTable> {
    const row = await store.find(db, { organizationId: principal.organizationId }, id);
    if (!row) throw new AppError('resource_not_found', `No such message: ${id}.`, { param });
    if (row.connection_id !== thread.connectionId || row.contact_id !== thread.contactId) {
      throw new AppError('reaction_target_invalid', 'The message is not part of the conversation being written to.', { param });
    }
    if (row.provider_message_id === null) {
      throw new AppError('reaction_target_invalid', 'The message has not reached the provider yet; try again once it is sent.', { param });
    }
    return row;
  }

  /** The 24-hour rule: only templates may open a conversation or reach a customer who went quiet. */
  async function assertWindowOpen(connectionId: string, contact: Contact | undefined): Promise<void> {
    const window = contact && (await conversations.windowOf(db, connectionId, contact.id));
    if (window?.open) return;
    const approved = await templates.listApproved(db, connectionId);
    throw new AppError(
      'window_closed',
      window?.lastInboundAt
        ? `The customer last wrote at ${window.lastInboundAt}; free-form messages were allowed until ${window.expiresAt}. Send an approved template.`
        : 'The customer has never written to this number; only an approved template can start the conversation.',
      { extra: { templates: approved } },
    );
  }

  async function check(principal: Principal, input: SendMessageInput): Promise<CheckedSend> {
    assertContentMatchesType(input);
    const connectionId = input.connection_id ?? principal.connectionId;
    if (connectionId === null) throw invalidParam('/connection_id', 'is required unless a connection key sends', 'required');
    const connection = await connections.getForReference(db, principal, connectionId, '/connection_id');
    if (connection.status === 'needs_reauth') throw new AppError('connection_needs_reauth', undefined, { param: '/connection_id' });
    if (connection.status !== 'connected') throw new AppError('connection_inactive', 'The connection is not connected.', { param: '/connection_id' });
    await passGuards(db, { organizationId: principal.organizationId, connectionId, test: connection.test });
    const { contact, phoneNumber } = await recipientOf(principal, input);
    const thread = { connectionId, contactId: contact?.id };

    let content: OutboundContent;
    let shown: unknown = input[input.type];
    if (input.type === 'template') {
      const prepared = await templates.prepareSend(db, { organizationId: principal.organizationId, connectionId }, input.template!);
      if (prepared.category === 'marketing' && contact?.consent.marketing.status === 'opted_out') {
        throw new AppError('contact_opted_out', `The contact opted out of marketing on ${contact.consent.marketing.since}.`, { param: '/template' });
      }
      content = prepared.content;
      shown = { ...input.template, id: prepared.templateId, name: prepared.content.name, language: prepared.content.language };
    } else {
      await assertWindowOpen(connectionId, contact);
      if (input.type === 'reaction') {
        const target = await targetInThread(principal, input.reaction!.message_id, thread, '/reaction/message_id');
        content = { type: 'reaction', messageId: target.provider_message_id!, emoji: input.reaction!.emoji };
      } else {
        content = simpleContent(input, input.type);
      }
    }
    const slot = mediaSlotOf(content);
    if (slot && 'mediaId' in slot.reference) await media.assertUsable(db, principal.organizationId, slot.reference.mediaId, slot.kind, slot.param);
    const replyTo = input.reply_to === undefined ? undefined : await targetInThread(principal, input.reply_to, thread, '/reply_to');
    return {
      principal,
      connectionId,
      organizationId: principal.organizationId,
      contact,
      recipientParam: input.contact_id === undefined ? '/to' : '/contact_id',
      phoneNumber,
      shown,
      type: input.type,
      replyTo,
      request: { content, to: phoneNumber.slice(1), ...(replyTo ? { replyTo: replyTo.provider_message_id! } : {}) },
      metadata: input.metadata ?? {},
    };
  }

  return {
    check,
    passGuards,
    /** Adds a check every later send passes (the module that owns the rule registers it when it is built). */
    guard(guard: SendGuard): void {
      guards.push(guard);
    },
  };
}

export type SendChecks = ReturnType<typeof createSendChecks>;
