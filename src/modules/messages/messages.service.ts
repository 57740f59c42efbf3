import type { Db, Trx } from '../../db/connect.ts';
import { toBoolean } from '../../db/dialect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { MessagesTable } from '../../db/schema.ts';
import type { EventSink } from '../../events/emit.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { isProviderError, providerErrorToAppError, type Provider } from '../../provider/provider.ts';
import type { MessageBody, ProviderErrorDetail, ProviderStatus } from '../../provider/updates.ts';
import type { ConnectionsService, ProviderAccess, ServingConnection } from '../connections/index.ts';
import type { ContactsService } from '../contacts/index.ts';
import type { ConversationsService } from '../conversations/index.ts';
import { connectionScopeOf, type Principal } from '../credentials/principal.ts';
import type { MediaService } from '../media/index.ts';
import { MESSAGE_TYPES, type Message, type MessageError, type MessageStatus, type MessageType } from './messages.schemas.ts';
import type { MessageFilters, MessagesStore } from './messages.store.ts';
import { isMediaKind } from './outbound.ts';

interface StoredContext {
  reply_to: string | null;
  reply_to_provider_message_id: string | null;
  forwarded: boolean;
  frequently_forwarded: boolean;
}

const toContext = (stored: StoredContext): StoredContext => ({
  reply_to: stored.reply_to,
  reply_to_provider_message_id: stored.reply_to_provider_message_id,
  forwarded: stored.forwarded,
  frequently_forwarded: stored.frequently_forwarded,
});

const toStoredError = (stored: MessageError): MessageError => ({ code: stored.code, title: stored.title, message: stored.message, details: stored.details });

interface StoredContent {
  body: unknown;
  referral: Record<string, unknown> | null;
}

/**
 * The API's message. Its fields are named one by one, in the order the response schema writes them
 * (the required ones, then the content under its type's name, the one optional field), because the
 * message routes write their answers with `JSON.stringify` (http/native-json.ts).
 */
export function toMessage(row: MessagesTable): Message {
  const content = JSON.parse(row.content) as StoredContent;
  const type = row.type as MessageType;
  return {
    id: row.id,
    object: 'message',
    connection_id: row.connection_id,
    conversation_id: row.conversation_id,
    contact_id: row.contact_id,
    direction: row.direction as Message['direction'],
    type,
    context: row.context === null ? null : toContext(JSON.parse(row.context) as StoredContext),
    referral: content.referral,
    status: row.status as MessageStatus,
    error: row.error === null ? null : toStoredError(JSON.parse(row.error) as MessageError),
    provider_message_id: row.provider_message_id,
    imported: toBoolean(row.imported),
    echo: toBoolean(row.echo),
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    sent_at: row.sent_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
    [type]: content.body,
  };
}

/** A provider type we do not model is stored as `unsupported`, naming what it was: never dropped. */
function typeAndBody(body: MessageBody): { type: MessageType; content: unknown } {
  // The provider's `contacts` is an array: the parser wraps it, the API shows it as the provider does.
  if (body.type === 'contacts' && Array.isArray(body.content.contacts)) return { type: 'contacts', content: body.content.contacts };
  if ((MESSAGE_TYPES as readonly string[]).includes(body.type)) return { type: body.type as MessageType, content: body.content };
  return { type: 'unsupported', content: { original_type: body.type, ...body.content } };
}

/**
 * Delivery states only move forward, whatever order or however often the provider reports them. A
 * failure ends a message that was not yet read; a voice note's `played` counts as read.
 */
const STATUS_RANK: Record<MessageStatus, number> = { received: 0, queued: 0, sent: 1, delivered: 2, read: 3, failed: 4 };

/** The statuses a message may move to `status` from: earlier ones, and never out of read or failed. */
function predecessorsOf(status: MessageStatus): MessageStatus[] {
  const ceiling = status === 'failed' ? STATUS_RANK.read : STATUS_RANK[status];
  return (['queued', 'sent', 'delivered', 'read'] as const).filter((earlier) => STATUS_RANK[earlier] < ceiling);
}

/** The way an outbound message goes when all is well; a status may skip ahead along it. */
const DELIVERY_PATH = ['queued', 'sent', 'delivered', 'read'] as const satisfies MessageStatus[];

/**
 * The statuses a move from `from` to `to` passes on the way, `to` included: a message read before
 * its delivery was reported was delivered, so subscribers see every step once and in order, however
 * the provider's reports arrive (the spec's four `message.status` per read message). A failure is
 * one step.
 */
function stepsOf(from: MessageStatus, to: MessageStatus): MessageStatus[] {
  if (to === 'failed') return [to];
  return DELIVERY_PATH.filter((step) => STATUS_RANK[step] > STATUS_RANK[from] && STATUS_RANK[step] <= STATUS_RANK[to]);
}

function toError(errors: ProviderErrorDetail[]): MessageError | null {
  const first = errors[0];
  return first ? { code: first.code, title: first.title ?? null, message: first.message ?? null, details: first.details ?? null } : null;
}

export interface MessagesServiceDeps {
  db: Db;
  store: MessagesStore;
  clock: Clock;
  events: EventSink;
  contacts: Pick<ContactsService, 'findOrCreateForInbound'>;
  conversations: Pick<ConversationsService, 'handToApp' | 'recordMessage'>;
  connections: Pick<ConnectionsService, 'providerAccess' | 'reportProviderError'>;
  /** Paced: read receipts and typing indicators count against the number's throughput. */
  provider: Pick<Provider, 'markRead' | 'sendTyping'>;
  media: Pick<MediaService, 'adoptInbound'>;
}

export function createMessagesService(deps: MessagesServiceDeps) {
  const { db, store, clock, events, contacts, conversations, connections, provider, media: mediaFiles } = deps;

  /**
   * A customer's photo, voice note or document is fetched from the provider and kept (the provider
   * forgets it within weeks): the message shows our `media_id` beside the provider's fields.
   */
  async function adoptMedia(trx: Trx, connection: ServingConnection, type: MessageType, content: unknown): Promise<unknown> {
    if (!isMediaKind(type) || typeof content !== 'object' || content === null) return content;
    const media = content as { id?: unknown; mime_type?: unknown; sha256?: unknown; filename?: unknown };
    if (typeof media.id !== 'string') return content;
    const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
    const mediaId = await mediaFiles.adoptInbound(trx, {
      organizationId: connection.organizationId,
      connectionId: connection.id,
      providerMediaId: media.id,
      kind: type,
      mimeType: text(media.mime_type),
      sha256: text(media.sha256),
      filename: text(media.filename),
    });
    return { ...content, media_id: mediaId };
  }

  async function fileMessage(
    trx: Trx,
    connection: ServingConnection,
    input: {
      providerMessageId: string;
      customerWaId: string;
      profileName: string | undefined;
      direction: 'inbound' | 'outbound';
      status: MessageStatus;
      sentAt: Date;
      body: MessageBody;
      imported: boolean;
      echo?: boolean;
    },
  ): Promise<Message | undefined> {
    // A retried or re-batched webhook must not file the same message twice.
    if (await store.findByProviderId(trx, connection.id, input.providerMessageId)) return undefined;
    const inbound = input.direction === 'inbound';
    const contact = await contacts.findOrCreateForInbound(trx, {
      organizationId: connection.organizationId,
      connectionId: connection.id,
      waId: input.customerWaId,
      profileName: input.profileName,
      at: input.sentAt,
    });
    const conversation = await conversations.recordMessage(trx, {
      organizationId: connection.organizationId,
      connectionId: connection.id,
      contactId: contact.id,
      at: input.sentAt,
      inbound,
      imported: input.imported,
    });
    const replyTo = input.body.context?.replyTo;
    const replied = replyTo === undefined ? undefined : await store.findByProviderId(trx, connection.id, replyTo);
    const { type, content: given } = typeAndBody(input.body);
    const content = inbound && !input.imported ? await adoptMedia(trx, connection, type, given) : given;
    const now = clock.now().toISOString();
    const row: MessagesTable = {
      id: newId('message', clock.now().getTime()),
      organization_id: connection.organizationId,
      connection_id: connection.id,
      conversation_id: conversation.id,
      contact_id: contact.id,
      direction: input.direction,
      type,
      content: JSON.stringify({ body: content, referral: (input.body.extra.referral as Record<string, unknown> | undefined) ?? null } satisfies StoredContent),
      context:
        input.body.context === undefined
          ? null
          : JSON.stringify({
              reply_to: replied?.id ?? null,
              reply_to_provider_message_id: replyTo ?? null,
              forwarded: input.body.context.forwarded ?? false,
              frequently_forwarded: input.body.context.frequentlyForwarded ?? false,
            } satisfies StoredContext),
      status: input.status,
      provider_message_id: input.providerMessageId,
      imported: input.imported ? 1 : 0,
      error: null,
      metadata: '{}',
      sent_at: input.sentAt.toISOString(),
      send_request: null,
      echo: input.echo ? 1 : 0,
      created_at: now,
      updated_at: now,
    };
    if (!(await store.insertIfAbsent(trx, row))) return undefined;
    return toMessage(row);
  }

  /**
   * Moves a message forward to `status` (never back, and never out of read or failed), recording the
   * provider's reason for a failure: one `message.status` per step it passes (`stepsOf`). The move is
   * a compare-and-set on the status it starts from, so two reports applied at once cannot both
   * announce the same step; the one that lost reads the status again. Answers whether it moved.
   */
  async function moveStatus(trx: Trx, row: MessagesTable, status: MessageStatus, error: MessageError | null): Promise<boolean> {
    let current: MessagesTable | undefined = row;
    while (current && predecessorsOf(status).includes(current.status as MessageStatus)) {
      const changes = { status, error: error === null ? current.error : JSON.stringify(error), updated_at: clock.now().toISOString() };
      if (await store.advanceStatus(trx, current.id, [current.status], changes)) {
        for (const step of stepsOf(current.status as MessageStatus, status)) {
          const object = toMessage({ ...current, ...changes, status: step, error: step === status ? changes.error : current.error });
          await events.emit(trx, { type: 'message.status', organizationId: current.organization_id, connectionId: current.connection_id, object });
        }
        return true;
      }
      current = await store.findById(trx, row.id);
    }
    return false;
  }

  /** Read receipts and typing indicators answer a customer's message; the provider call comes first. */
  async function actOnInbound(
    principal: Principal,
    id: string,
    what: string,
    call: (access: ProviderAccess, providerMessageId: string) => Promise<void>,
  ): Promise<Message> {
    const row = await store.find(db, connectionScopeOf(principal), id);
    if (!row) throw notFound('message');
    if (row.direction !== 'inbound') throw new AppError('invalid_state', `Only a customer's message can be ${what}; this one is outbound.`);
    const access = await connections.providerAccess(principal, row.connection_id);
    try {
      await call(access, row.provider_message_id!);
    } catch (error) {
      if (!isProviderError(error)) throw error;
      await connections.reportProviderError(row.connection_id, error);
      throw providerErrorToAppError(error);
    }
    const changes = { status: 'read', error: row.error, updated_at: clock.now().toISOString() };
    // A customer's message goes from received to read once; reading it again changes nothing.
    if (!(await store.advanceStatus(db, row.id, ['received'], changes))) return toMessage((await store.findById(db, row.id))!);
    return toMessage({ ...row, ...changes });
  }

  return {
    /** Another organization's message, or one on a connection the caller may not see, is not found. */
    async get(principal: Principal, id: string): Promise<Message> {
      const row = await store.find(db, connectionScopeOf(principal), id);
      if (!row) throw notFound('message');
      return toMessage(row);
    },

    /** The newest message of each of these conversations (for `expand=last_message`), by conversation id. */
    async lastOfConversations(conversationIds: readonly string[]): Promise<Map<string, Message>> {
      const rows = await store.lastOfConversations(db, conversationIds);
      return new Map(rows.map((row) => [row.conversation_id, toMessage(row)]));
    },

    /** A filter naming another organization's (or an invisible) object simply matches nothing. */
    async list(principal: Principal, filters: MessageFilters, page: PageRequest): Promise<Page<Message>> {
      return mapPage(await store.list(db, connectionScopeOf(principal), filters, page), toMessage);
    },

    /** A customer's message: stored with its contact and conversation, then `message.received`. */
    async receive(
      trx: Trx,
      connection: ServingConnection,
      input: { providerMessageId: string; from: string; profileName: string | undefined; sentAt: Date; body: MessageBody },
    ): Promise<Message | undefined> {
      const message = await fileMessage(trx, connection, {
        providerMessageId: input.providerMessageId,
        customerWaId: input.from,
        profileName: input.profileName,
        direction: 'inbound',
        status: 'received',
        sentAt: input.sentAt,
        body: input.body,
        imported: false,
      });
      if (message)
        await events.emit(trx, { type: 'message.received', organizationId: connection.organizationId, connectionId: connection.id, object: message });
      return message;
    },

    /**
     * Coexistence: the owner wrote to a customer from the business app. Filed once as an outbound
     * message of the thread however often the echo arrives, even before the customer's message it
     * answers (the thread is created by whichever comes first), then `message.echo`, and the
     * conversation passes to the app: automations stand back while the owner answers by hand.
     */
    async recordEcho(
      trx: Trx,
      connection: ServingConnection,
      input: { providerMessageId: string; to: string; sentAt: Date; body: MessageBody },
    ): Promise<Message | undefined> {
      const message = await fileMessage(trx, connection, {
        providerMessageId: input.providerMessageId,
        customerWaId: input.to,
        profileName: undefined,
        direction: 'outbound',
        status: 'sent',
        sentAt: input.sentAt,
        body: input.body,
        imported: false,
        echo: true,
      });
      if (!message) return undefined;
      await events.emit(trx, { type: 'message.echo', organizationId: connection.organizationId, connectionId: connection.id, object: message });
      await conversations.handToApp(trx, message.conversation_id);
      return message;
    },

    /**
     * Coexistence history: stored as imported, which opens no window, reopens no conversation and
     * emits no message event (automations and webhooks must not react to last month's chats).
     * Answers how many messages were new.
     */
    async importHistory(
      trx: Trx,
      connection: ServingConnection,
      thread: {
        userId: string;
        messages: { providerMessageId: string; direction: 'inbound' | 'outbound'; sentAt: Date; status: string | undefined; body: MessageBody }[];
      },
    ): Promise<number> {
      let imported = 0;
      for (const message of thread.messages) {
        const reported = message.status?.toLowerCase();
        const status: MessageStatus =
          message.direction === 'inbound'
            ? 'received'
            : reported === 'read' || reported === 'played'
              ? 'read'
              : reported === 'delivered'
                ? 'delivered'
                : reported === 'error'
                  ? 'failed'
                  : 'sent';
        const stored = await fileMessage(trx, connection, {
          providerMessageId: message.providerMessageId,
          customerWaId: thread.userId,
          profileName: undefined,
          direction: message.direction,
          status,
          sentAt: message.sentAt,
          body: message.body,
          imported: true,
        });
        if (stored) imported++;
      }
      return imported;
    },

    /**
     * A delivery status from the provider. Answers false when the message is not ours (sent by
     * another system on the same number, or before the connection existed): there is nothing to move.
     * A status can overtake the answer to our own send: it names the message by the callback data
     * every send carries (our id), and its provider id is recorded then.
     */
    async applyStatus(
      trx: Trx,
      connection: ServingConnection,
      input: { providerMessageId: string; status: ProviderStatus; errors: ProviderErrorDetail[]; callbackData?: string | undefined },
    ): Promise<boolean> {
      let row = await store.findByProviderId(trx, connection.id, input.providerMessageId);
      if (!row && input.callbackData?.startsWith('msg_')) {
        const sent = await store.findById(trx, input.callbackData);
        // The send's answer may have been recorded between the two reads: then the id already matches.
        if (sent?.connection_id === connection.id && (sent.provider_message_id === null || sent.provider_message_id === input.providerMessageId)) {
          if (sent.provider_message_id === null) await store.recordProviderId(trx, sent.id, input.providerMessageId);
          row = { ...sent, provider_message_id: input.providerMessageId };
        }
      }
      if (!row || row.direction !== 'outbound') return false;
      const status: MessageStatus = input.status === 'played' ? 'read' : input.status;
      await moveStatus(trx, row, status, status === 'failed' ? toError(input.errors) : null);
      return true;
    },

    moveStatus,

    /** Tells the customer their message was read (the blue ticks); answers the message, now `read`. */
    async markRead(principal: Principal, id: string): Promise<Message> {
      return actOnInbound(principal, id, 'marked read', (access, providerMessageId) => provider.markRead(access.credentials, providerMessageId));
    },

    /** Shows the customer a typing indicator (up to 25 s, or until the reply); it marks their message read too. */
    async showTyping(principal: Principal, id: string): Promise<Message> {
      return actOnInbound(principal, id, 'answered with typing', (access, providerMessageId) => provider.sendTyping(access.credentials, providerMessageId));
    },
  };
}

export type MessagesService = ReturnType<typeof createMessagesService>;
