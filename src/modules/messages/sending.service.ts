import type { Db } from '../../db/connect.ts';
import type { MessagesTable } from '../../db/schema.ts';
import type { EventEmitter } from '../../events/emit.ts';
import { JobError } from '../../jobs/job.ts';
import { messageSend } from '../../jobs/catalog.ts';
import type { JobContext } from '../../jobs/worker.ts';
import type { Queue } from '../../jobs/queue.ts';
import { MINUTE, type Clock } from '../../lib/clock.ts';
import { AppError, invalidParam } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Log } from '../../lib/log.ts';
import { isProviderError, type Provider, type ProviderError } from '../../provider/provider.ts';
import type { ConnectionsService, ProviderAccess } from '../connections/index.ts';
import type { ConversationLocksService } from '../conversation-locks/index.ts';
import type { Contact, ContactsService } from '../contacts/index.ts';
import type { ConversationsService } from '../conversations/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import type { MediaService } from '../media/index.ts';
import type { TemplatesService } from '../templates/index.ts';
import type { Message, MessageError, ReactInput, SendMessageInput } from './messages.schemas.ts';
import { toMessage, type MessagesService } from './messages.service.ts';
import type { MessagesStore } from './messages.store.ts';
import { assertContentMatchesType, mediaSlotOf, resolveMedia, simpleContent, type OutboundContent, type SendRequest } from './outbound.ts';

/**
 * A send that timed out may have reached the provider. It is sent again only after this long
 * without a status naming it (every status carries our id as callback data), so that a slow
 * provider does not make a customer receive the same message twice.
 */
export const SEND_TIMEOUT_GRACE_MS = 2 * MINUTE;

export interface SendingServiceDeps {
  db: Db;
  store: MessagesStore;
  clock: Clock;
  events: EventEmitter;
  queue: Queue;
  log: Log;
  provider: Provider;
  messages: MessagesService;
  connections: ConnectionsService;
  contacts: ContactsService;
  conversations: ConversationsService;
  templates: TemplatesService;
  media: MediaService;
  locks: ConversationLocksService;
}

/** What a send is about to store, once every check has passed. */
interface CheckedSend {
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
 * Sending: every check that can refuse a message runs before anything is written; the message is
 * then stored, queued and answered in one transaction, and the provider is called by the queued
 * job. A retried request replays its stored answer (Idempotency-Key), a retried job finds the
 * message already sent, and a crash between the two leaves a queued job: never lost, never twice.
 */
export function createSendingService(deps: SendingServiceDeps) {
  const { db, store, clock, events, queue, log, provider, messages, connections, contacts, conversations, templates, media, locks } = deps;

  async function recipientOf(principal: Principal, input: { contact_id?: string | undefined; to?: string | undefined }): Promise<{ contact: Contact | undefined; phoneNumber: string }> {
    if ((input.contact_id === undefined) === (input.to === undefined)) {
      throw invalidParam(input.to === undefined ? '/contact_id' : '/to', input.to === undefined ? 'or to is required' : 'cannot be given with contact_id', input.to === undefined ? 'required' : 'exclusive');
    }
    if (input.contact_id !== undefined) {
      const contact = await contacts.getForReference(db, principal, input.contact_id, '/contact_id');
      return { contact, phoneNumber: contact.phone_number };
    }
    return { contact: await contacts.findByPhoneNumber(db, principal.organizationId, input.to!), phoneNumber: input.to! };
  }

  /** A message quoted or reacted to must be one of this conversation, and known to the provider. */
  async function targetInThread(principal: Principal, id: string, thread: { connectionId: string; contactId: string | undefined }, param: string): Promise<MessagesTable> {
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
    throw new AppError('window_closed', window?.lastInboundAt
      ? `The customer last wrote at ${window.lastInboundAt}; free-form messages were allowed until ${window.expiresAt}. Send an approved template.`
      : 'The customer has never written to this number; only an approved template can start the conversation.', { extra: { templates: approved } });
  }

  async function check(principal: Principal, input: SendMessageInput): Promise<CheckedSend> {
    assertContentMatchesType(input);
    const connectionId = input.connection_id ?? principal.connectionId;
    if (connectionId === null) throw invalidParam('/connection_id', 'is required unless a connection key sends', 'required');
    const connection = await connections.getForReference(db, principal, connectionId, '/connection_id');
    if (connection.status === 'needs_reauth') throw new AppError('connection_needs_reauth', undefined, { param: '/connection_id' });
    if (connection.status !== 'connected') throw new AppError('connection_inactive', 'The connection is not connected.', { param: '/connection_id' });
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
      principal, connectionId, organizationId: principal.organizationId, contact, recipientParam: input.contact_id === undefined ? '/to' : '/contact_id', phoneNumber, shown, type: input.type, replyTo,
      request: { content, to: phoneNumber.slice(1), ...(replyTo ? { replyTo: replyTo.provider_message_id! } : {}) },
      metadata: input.metadata ?? {},
    };
  }

  async function storeAndQueue(checked: CheckedSend): Promise<Message> {
    return db.transaction().execute(async (trx) => {
      // Checked before the transaction; held now, so that a merge or delete since is not written past.
      const contact = checked.contact
        ? await contacts.lockForReference(trx, checked.principal, checked.contact.id, checked.recipientParam)
        : await contacts.findOrCreateForInbound(trx, {
            organizationId: checked.organizationId, connectionId: checked.connectionId, waId: checked.request.to, profileName: undefined, at: clock.now(),
          });
      const conversation = await conversations.recordMessage(trx, {
        organizationId: checked.organizationId, connectionId: checked.connectionId, contactId: contact.id, at: clock.now(), inbound: false, imported: false,
      });
      // Inside the transaction that stores the message, so that a lock taken meanwhile is seen.
      await locks.assertMaySend(trx, conversation.id, checked.principal);
      const now = clock.now().toISOString();
      const row: MessagesTable = {
        id: newId('message', clock.now().getTime()),
        organization_id: checked.organizationId,
        connection_id: checked.connectionId,
        conversation_id: conversation.id,
        contact_id: contact.id,
        direction: 'outbound',
        type: checked.type,
        content: JSON.stringify({ body: checked.shown, referral: null }),
        context: checked.replyTo
          ? JSON.stringify({ reply_to: checked.replyTo.id, reply_to_provider_message_id: checked.replyTo.provider_message_id, forwarded: false, frequently_forwarded: false })
          : null,
        status: 'queued',
        provider_message_id: null,
        imported: 0,
        error: null,
        metadata: JSON.stringify(checked.metadata),
        sent_at: null,
        send_request: JSON.stringify(checked.request),
        echo: 0,
        created_at: now,
        updated_at: now,
      };
      await store.insert(trx, row);
      const message = toMessage(row);
      await events.emit(trx, { type: 'message.status', organizationId: checked.organizationId, connectionId: checked.connectionId, object: message });
      await queue.enqueue(trx, messageSend, { message_id: row.id });
      return message;
    });
  }

  /** Ends a message that will not be sent, with why: `message.status` failed. */
  async function fail(row: MessagesTable, error: MessageError): Promise<void> {
    await db.transaction().execute((trx) => messages.moveStatus(trx, row, 'failed', error));
  }

  function errorOf(error: ProviderError): MessageError {
    return { code: error.code ?? null, title: error.category, message: error.message, details: error.traceId ? `trace id ${error.traceId}` : null };
  }

  /** The provider took the message: its id, `message.sent`, and `sent` unless a status overtook us. */
  async function recordAccepted(row: MessagesTable, providerMessageId: string): Promise<void> {
    await db.transaction().execute(async (trx) => {
      await store.recordProviderId(trx, row.id, providerMessageId);
      const now = clock.now().toISOString();
      if (!(await store.markAccepted(trx, row.id, { sent_at: now, updated_at: now }))) return;
      const accepted = { ...row, provider_message_id: providerMessageId, sent_at: now, updated_at: now };
      await events.emit(trx, { type: 'message.sent', organizationId: row.organization_id, connectionId: row.connection_id, object: toMessage(accepted) });
      await messages.moveStatus(trx, accepted, 'sent', null);
    });
  }

  /** A failed provider call: retried while that can help and attempts remain, otherwise the message fails. */
  async function handleProviderFailure(row: MessagesTable, error: ProviderError, context: JobContext): Promise<void> {
    if (error.category === 'auth') await connections.reportProviderError(row.connection_id, error);
    const lastAttempt = context.attempt >= context.maxAttempts;
    if (error.category === 'timeout' && !lastAttempt) {
      throw new JobError('the provider did not answer; sent again after the grace period unless a status shows it arrived', {
        retryable: true, retryAt: new Date(clock.now().getTime() + SEND_TIMEOUT_GRACE_MS), cause: error,
      });
    }
    if (error.retryable && !lastAttempt) {
      const retryAt = error.retryAfterSeconds === undefined ? undefined : new Date(clock.now().getTime() + error.retryAfterSeconds * 1000);
      throw new JobError(`the provider failed (${error.category}); retried`, { retryable: true, ...(retryAt ? { retryAt } : {}), cause: error });
    }
    log.warn({ message_id: row.id, category: error.category, code: error.code }, 'message failed at the provider');
    await fail(row, errorOf(error));
  }

  return {
    async send(actor: Actor, input: SendMessageInput): Promise<Message> {
      return storeAndQueue(await check(actor.principal, input));
    },

    /** A reaction to a message, sent into the message's own conversation. */
    async react(actor: Actor, id: string, input: ReactInput): Promise<Message> {
      const target = await messages.get(actor.principal, id);
      return storeAndQueue(await check(actor.principal, {
        connection_id: target.connection_id, contact_id: target.contact_id, type: 'reaction',
        reaction: { message_id: target.id, emoji: input.emoji }, ...(input.metadata ? { metadata: input.metadata } : {}),
      }));
    },

    /** The queued job: sends a stored message once. Safe to run again at any point. */
    async deliver(messageId: string, context: JobContext): Promise<void> {
      const row = await store.findById(db, messageId);
      // Gone, or already accepted: nothing to do.
      if (!row || row.direction !== 'outbound' || row.sent_at !== null || row.send_request === null) return;
      // A status naming the message overtook the answer to an earlier attempt: it went out.
      if (row.provider_message_id !== null) return recordAccepted(row, row.provider_message_id);
      if (row.status !== 'queued') return;
      let access: ProviderAccess;
      try {
        access = await connections.providerAccessForWork(row.connection_id);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        return fail(row, { code: null, title: error.code, message: error.message, details: null });
      }
      const request = JSON.parse(row.send_request) as SendRequest;
      try {
        const content = await resolveMedia(request.content, async (reference) =>
          'link' in reference ? reference : media.providerSourceFor(row.organization_id, reference.mediaId, { id: access.connectionId, credentials: access.credentials }));
        const sent = await provider.sendMessage(access.credentials, { ...content, to: request.to, replyTo: request.replyTo, callbackData: row.id });
        await recordAccepted(row, sent.providerMessageId);
      } catch (error) {
        if (isProviderError(error)) return handleProviderFailure(row, error, context);
        if (error instanceof AppError && !error.retryable) return fail(row, { code: null, title: error.code, message: error.message, details: null });
        throw error;
      }
    },
  };
}

export type SendingService = ReturnType<typeof createSendingService>;
