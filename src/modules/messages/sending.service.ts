import type { Db, Trx } from '../../db/connect.ts';
import type { CommitWithRequests } from '../../db/request-transaction.ts';
import type { MessagesTable } from '../../db/schema.ts';
import type { EventSink } from '../../events/emit.ts';
import { JobError } from '../../jobs/job.ts';
import { messageSend } from '../../jobs/catalog.ts';
import type { JobContext } from '../../jobs/worker.ts';
import type { Queue } from '../../jobs/queue.ts';
import { MINUTE, type Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Log } from '../../lib/log.ts';
import { isProviderError, type Provider, type ProviderError } from '../../provider/provider.ts';
import type { ConnectionsService, ProviderAccess } from '../connections/index.ts';
import type { ConversationLocksService } from '../conversation-locks/index.ts';
import type { ContactsService } from '../contacts/index.ts';
import type { ConversationsService } from '../conversations/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import type { MediaService } from '../media/index.ts';
import type { Message, MessageError, ReactInput, SendMessageInput } from './messages.schemas.ts';
import { toMessage, type MessagesService } from './messages.service.ts';
import type { MessagesStore } from './messages.store.ts';
import { resolveMedia, type SendRequest } from './outbound.ts';
import type { CheckedSend, SendChecks } from './send-checks.ts';
import type { TemplateContent } from '../templates/index.ts';

/**
 * A send that timed out may have reached the provider. It is sent again only after this long
 * without a status naming it (every status carries our id as callback data), so that a slow
 * provider does not make a customer receive the same message twice.
 */
export const SEND_TIMEOUT_GRACE_MS = 2 * MINUTE;

export interface SendingServiceDeps {
  db: Db;
  /** The store's: the worker's record of an accepted send commits with the requests' (grouped on SQLite). */
  commitWithRequests: CommitWithRequests;
  store: MessagesStore;
  clock: Clock;
  events: EventSink;
  queue: Pick<Queue, 'enqueue'>;
  log: Log;
  provider: Pick<Provider, 'sendMessage'>;
  checks: SendChecks;
  messages: Pick<MessagesService, 'get' | 'moveStatus'>;
  connections: Pick<ConnectionsService, 'providerAccessForWork' | 'reportProviderError'>;
  contacts: Pick<ContactsService, 'lockForReference' | 'findOrCreateForInbound'>;
  conversations: Pick<ConversationsService, 'recordMessage'>;
  media: Pick<MediaService, 'providerSourceFor'>;
  locks: Pick<ConversationLocksService, 'assertMaySend'>;
}

/**
 * Sending, in three steps: every check that can refuse a message runs before anything is written
 * (`send-checks.ts`); the message is then stored, queued and answered in one transaction; and the
 * provider is called by the queued job. A retried request replays its stored answer (Idempotency-Key), a retried job finds the
 * message already sent, and a crash between the two leaves a queued job: never lost, never twice.
 */
export function createSendingService(deps: SendingServiceDeps) {
  const { db, commitWithRequests, store, clock, events, queue, log, provider, checks, messages, connections, contacts, conversations, media, locks } = deps;

  /** Files an outbound message in its conversation, `queued`, with its `message.status`. */
  async function insertOutbound(
    trx: Trx,
    outbound: {
      organizationId: string;
      connectionId: string;
      contactId: string;
      type: Message['type'];
      shown: unknown;
      request: SendRequest;
      replyTo?: MessagesTable | undefined;
      metadata: Record<string, unknown>;
    },
    beforeInsert?: (conversationId: string) => Promise<void>,
  ): Promise<Message> {
    const conversation = await conversations.recordMessage(trx, {
      organizationId: outbound.organizationId,
      connectionId: outbound.connectionId,
      contactId: outbound.contactId,
      at: clock.now(),
      inbound: false,
      imported: false,
    });
    await beforeInsert?.(conversation.id);
    const now = clock.now().toISOString();
    const { replyTo } = outbound;
    const row: MessagesTable = {
      id: newId('message', clock.now().getTime()),
      organization_id: outbound.organizationId,
      connection_id: outbound.connectionId,
      conversation_id: conversation.id,
      contact_id: outbound.contactId,
      direction: 'outbound',
      type: outbound.type,
      content: JSON.stringify({ body: outbound.shown, referral: null }),
      context: replyTo
        ? JSON.stringify({ reply_to: replyTo.id, reply_to_provider_message_id: replyTo.provider_message_id, forwarded: false, frequently_forwarded: false })
        : null,
      status: 'queued',
      provider_message_id: null,
      imported: 0,
      error: null,
      metadata: JSON.stringify(outbound.metadata),
      sent_at: null,
      send_request: JSON.stringify(outbound.request),
      echo: 0,
      created_at: now,
      updated_at: now,
    };
    await store.insert(trx, row);
    const message = toMessage(row);
    await events.emit(trx, { type: 'message.status', organizationId: outbound.organizationId, connectionId: outbound.connectionId, object: message });
    return message;
  }

  async function storeAndQueue(checked: CheckedSend): Promise<Message> {
    return db.transaction().execute((trx) => storeAndQueueIn(trx, checked));
  }

  async function storeAndQueueIn(trx: Trx, checked: CheckedSend): Promise<Message> {
    // Checked before the transaction; held now, so that a merge or delete since is not written past.
    const contact = checked.contact
      ? await contacts.lockForReference(trx, checked.principal, checked.contact.id, checked.recipientParam)
      : await contacts.findOrCreateForInbound(trx, {
          organizationId: checked.organizationId,
          connectionId: checked.connectionId,
          waId: checked.request.to,
          profileName: undefined,
          at: clock.now(),
        });
    const message = await insertOutbound(
      trx,
      { ...checked, contactId: contact.id },
      // Inside the transaction that stores the message, so that a lock taken meanwhile is seen.
      (conversationId) => locks.assertMaySend(trx, conversationId, checked.principal),
    );
    await queue.enqueue(trx, messageSend, { message_id: message.id });
    return message;
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
    await commitWithRequests(() =>
      db.transaction().execute(async (trx) => {
        await store.recordProviderId(trx, row.id, providerMessageId);
        const now = clock.now().toISOString();
        if (!(await store.markAccepted(trx, row.id, { sent_at: now, updated_at: now }))) return;
        const accepted = { ...row, provider_message_id: providerMessageId, sent_at: now, updated_at: now };
        await events.emit(trx, { type: 'message.sent', organizationId: row.organization_id, connectionId: row.connection_id, object: toMessage(accepted) });
        await messages.moveStatus(trx, accepted, 'sent', null);
      }),
    );
  }

  /** A failed provider call: retried while that can help and attempts remain, otherwise the message fails. */
  async function handleProviderFailure(row: MessagesTable, error: ProviderError, context: JobContext): Promise<void> {
    if (error.category === 'auth') await connections.reportProviderError(row.connection_id, error);
    const lastAttempt = context.attempt >= context.maxAttempts;
    if (error.category === 'timeout' && !lastAttempt) {
      throw new JobError('the provider did not answer; sent again after the grace period unless a status shows it arrived', {
        retryable: true,
        retryAt: new Date(clock.now().getTime() + SEND_TIMEOUT_GRACE_MS),
        cause: error,
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
      return storeAndQueue(await checks.check(actor.principal, input));
    },

    /**
     * A send in two halves, for a caller whose own transaction must hold the message (an automation's
     * step, so that the step and its message commit together or not at all): `prepare` runs every check
     * that can refuse it, reading only, before that transaction; `storeChecked` files and queues it inside.
     */
    prepare: (principal: Principal, input: SendMessageInput): Promise<CheckedSend> => checks.check(principal, input),
    storeChecked: storeAndQueueIn,

    /** Adds a check to every send, however it arrives (the API, a notification, an automation): see `SendGuard`. */
    guardSends: checks.guard,
    /** The guards alone, for a sender that runs its own checks before `storeForRail` (the notification rail). */
    passGuards: checks.passGuards,

    /** A reaction to a message, sent into the message's own conversation. */
    async react(actor: Actor, id: string, input: ReactInput): Promise<Message> {
      const target = await messages.get(actor.principal, id);
      return storeAndQueue(
        await checks.check(actor.principal, {
          connection_id: target.connection_id,
          contact_id: target.contact_id,
          type: 'reaction',
          reaction: { message_id: target.id, emoji: input.emoji },
          ...(input.metadata ? { metadata: input.metadata } : {}),
        }),
      );
    },

    /**
     * The notification rail's message: a template filed in the rail's transaction, to a number (its
     * contact found or created), and sent by the rail's own job with `deliver` and a deadline, never
     * by `message.send`. A conversation lock does not hold it back: locks keep people from answering
     * over each other, and a notification is a message the business scheduled to arrive on time.
     */
    async storeForRail(
      trx: Trx,
      input: { organizationId: string; connectionId: string; to: string; content: TemplateContent; shown: unknown; metadata: Record<string, unknown> },
    ): Promise<Message> {
      const contact = await contacts.findOrCreateForInbound(trx, {
        organizationId: input.organizationId,
        connectionId: input.connectionId,
        waId: input.to.slice(1),
        profileName: undefined,
        at: clock.now(),
      });
      return insertOutbound(trx, {
        organizationId: input.organizationId,
        connectionId: input.connectionId,
        contactId: contact.id,
        type: 'template',
        shown: input.shown,
        request: { content: input.content, to: input.to.slice(1) },
        metadata: input.metadata,
      });
    },

    /**
     * Sends a stored message once (the queued job's work, and the notification rail's). Safe to run
     * again at any point. With a `deadline`, the message is not sent once it has passed, nor after
     * waiting past it for a pacing slot or out a throttle: answers `deadline_passed` and leaves the
     * message as it was, for the caller to end.
     */
    async deliver(messageId: string, context: JobContext, deadline?: Date): Promise<'done' | 'deadline_passed'> {
      const row = await store.findById(db, messageId);
      // Gone, or already accepted: nothing to do.
      if (!row || row.direction !== 'outbound' || row.sent_at !== null || row.send_request === null) return 'done';
      // A status naming the message overtook the answer to an earlier attempt: it went out.
      if (row.provider_message_id !== null) {
        await recordAccepted(row, row.provider_message_id);
        return 'done';
      }
      if (row.status !== 'queued') return 'done';
      const leftMs = deadline === undefined ? Infinity : deadline.getTime() - clock.now().getTime();
      if (leftMs <= 0) return 'deadline_passed';
      let access: ProviderAccess;
      try {
        access = await connections.providerAccessForWork(row.connection_id);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        await fail(row, { code: null, title: error.code, message: error.message, details: null });
        return 'done';
      }
      const request = JSON.parse(row.send_request) as SendRequest;
      const waitSignal = leftMs === Infinity ? undefined : AbortSignal.timeout(leftMs);
      try {
        const content = await resolveMedia(request.content, async (reference) =>
          'link' in reference
            ? reference
            : media.providerSourceFor(row.organization_id, reference.mediaId, { id: access.connectionId, credentials: access.credentials }),
        );
        const sent = await provider.sendMessage(
          access.credentials,
          { ...content, to: request.to, replyTo: request.replyTo, callbackData: row.id },
          waitSignal ? { waitSignal } : undefined,
        );
        await recordAccepted(row, sent.providerMessageId);
      } catch (error) {
        // The deadline passed while the send waited for its turn: it never left.
        if (waitSignal?.aborted && error === waitSignal.reason) return 'deadline_passed';
        if (isProviderError(error)) await handleProviderFailure(row, error, context);
        else if (error instanceof AppError && !error.retryable) await fail(row, { code: null, title: error.code, message: error.message, details: null });
        else throw error;
      }
      return 'done';
    },

    /** Ends a message its sender gave up on before it was sent (a notification that expired). */
    async abandon(trx: Trx, messageId: string, error: MessageError): Promise<void> {
      const row = await store.findById(trx, messageId);
      if (row && row.status === 'queued' && row.sent_at === null) await messages.moveStatus(trx, row, 'failed', error);
    },
  };
}

export type SendingService = ReturnType<typeof createSendingService>;
