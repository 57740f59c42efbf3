import type { Db, Trx } from '../../db/connect.ts';
import type { CommitWithRequests } from '../../db/request-transaction.ts';
import { providerWebhookProcess } from '../../jobs/catalog.ts';
import type { Queue } from '../../jobs/queue.ts';
import type { JobContext } from '../../jobs/worker.ts';
import type { Clock } from '../../lib/clock.ts';
import { constantTimeEqual, sha256Hex } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Log } from '../../lib/log.ts';
import type { ProviderUpdate } from '../../provider/updates.ts';
import type { ConnectionsService, ServingConnection } from '../connections/index.ts';
import type { MessagesService } from '../messages/index.ts';
import type { TemplatesService } from '../templates/index.ts';
import type { ProviderWebhooksStore } from './provider-webhooks.store.ts';

/** Updates that need nothing but the store: applied in one transaction with the webhook's processing mark and its job's outcome. */
type LocalUpdate = Exclude<ProviderUpdate, { kind: 'number_quality' | 'account' }>;
const isLocal = (update: ProviderUpdate): update is LocalUpdate => update.kind !== 'number_quality' && update.kind !== 'account';

/** The provider's account events after which we can no longer reach the account's numbers. */
const ACCESS_ENDED = new Set(['PARTNER_REMOVED', 'PARTNER_APP_UNINSTALLED', 'ACCOUNT_DELETED', 'ACCOUNT_OFFBOARDED']);

export interface InboundWebhooks {
  /** Checks `X-Hub-Signature-256` over the exact bytes received. */
  verifySignature(rawBody: Buffer, header: string | undefined): boolean;
  /** The provider's envelope in domain words; throws on a body that is not an envelope at all. */
  parse(body: unknown): ProviderUpdate[];
  /** The token the provider echoes in its subscription handshake. */
  verifyToken: string;
}

export interface ProviderWebhooksServiceDeps {
  db: Db;
  /** The store's: a webhook applied at once commits with the write requests' (grouped on SQLite). */
  commitWithRequests: CommitWithRequests;
  store: ProviderWebhooksStore;
  clock: Clock;
  queue: Pick<Queue, 'enqueue'>;
  log: Log;
  inbound: InboundWebhooks;
  connections: Pick<ConnectionsService, 'accountRemoved' | 'findServing' | 'findServingAccount' | 'historyImported' | 'numberQualityChanged'>;
  messages: Pick<MessagesService, 'applyStatus' | 'importHistory' | 'receive' | 'recordEcho'>;
  templates: Pick<TemplatesService, 'statusChanged'>;
}

export function createProviderWebhooksService(deps: ProviderWebhooksServiceDeps) {
  const { db, commitWithRequests, store, clock, queue, log, inbound, connections, messages, templates } = deps;

  /** Finds the connection of a number, or says why the update is skipped. */
  async function serving(trx: Trx, phoneNumberId: string, kind: string): Promise<ServingConnection | undefined> {
    const connection = await connections.findServing(trx, phoneNumberId);
    if (!connection) log.warn({ phone_number_id: phoneNumberId, kind }, 'provider webhook for a number no connection serves; skipped');
    return connection;
  }

  /** Applies an update that needs nothing but the store, in the caller's transaction. */
  async function applyIn(trx: Trx, update: LocalUpdate): Promise<void> {
    switch (update.kind) {
      case 'message': {
        const connection = await serving(trx, update.number.phoneNumberId, update.kind);
        if (!connection) return;
        if (update.from === undefined) {
          log.warn({ connection_id: connection.id }, 'inbound message without a phone number (username-only user); skipped');
          return;
        }
        await messages.receive(trx, connection, {
          providerMessageId: update.providerMessageId,
          from: update.from,
          profileName: update.profileName,
          sentAt: update.sentAt,
          body: update.body,
        });
        return;
      }
      case 'status': {
        const connection = await serving(trx, update.number.phoneNumberId, update.kind);
        if (!connection) return;
        const known = await messages.applyStatus(trx, connection, update);
        if (!known)
          log.info(
            { connection_id: connection.id, provider_message_id: update.providerMessageId },
            'status for a message not sent through this service; skipped',
          );
        return;
      }
      case 'history': {
        const connection = await serving(trx, update.number.phoneNumberId, update.kind);
        if (!connection) return;
        let imported = 0;
        for (const thread of update.threads) imported += await messages.importHistory(trx, connection, thread);
        const failure = update.errors[0];
        await connections.historyImported(trx, connection.id, {
          progress: update.progress,
          messages: imported,
          failure: failure && `${failure.title ?? 'The history import failed'} (provider code ${failure.code})`,
        });
        return;
      }
      case 'errors':
        log.warn({ phone_number_id: update.number.phoneNumberId, errors: update.errors }, 'the provider reported errors for a number');
        return;
      case 'template_status': {
        for (const connection of await connections.findServingAccount(trx, update.wabaId)) {
          const known = await templates.statusChanged(trx, connection.id, update);
          if (!known)
            log.info(
              { connection_id: connection.id, provider_template_id: update.providerTemplateId },
              'status of a template not synced yet; the next sync records it',
            );
        }
        return;
      }
      case 'echo': {
        const connection = await serving(trx, update.number.phoneNumberId, update.kind);
        if (connection) await messages.recordEcho(trx, connection, update);
        return;
      }
      case 'unhandled':
        log.info({ kind: update.kind }, 'provider update kept but not processed');
        return;
    }
  }

  /** Applies a webhook's updates, all of them local, and marks it processed, in the caller's transaction. */
  async function applyAllIn(trx: Trx, id: string, updates: LocalUpdate[]): Promise<void> {
    for (const update of updates) await applyIn(trx, update);
    await store.markProcessed(trx, id, { processed_at: clock.now().toISOString(), updates: updates.length, error: null });
  }

  /**
   * Applies an update on its own: one that reads the provider or writes in transactions of its own
   * (a number's quality, an account's end), or a local one in a transaction of its own.
   */
  async function applyAlone(update: ProviderUpdate): Promise<void> {
    switch (update.kind) {
      case 'number_quality':
        return connections.numberQualityChanged(update.wabaId, update.displayPhoneNumber);
      case 'account':
        if (ACCESS_ENDED.has(update.event)) await connections.accountRemoved(update.wabaId, update.event);
        else log.info({ waba_id: update.wabaId, event: update.event }, 'provider account update recorded');
        return;
      default:
        return db.transaction().execute((trx) => applyIn(trx, update));
    }
  }

  /** The webhook's updates when all of them need only the store; undefined otherwise (or when it is no envelope). */
  function localUpdatesOf(body: unknown): LocalUpdate[] | undefined {
    try {
      const updates = inbound.parse(body);
      return updates.every(isLocal) ? updates : undefined;
    } catch {
      // Not an envelope: the job records why.
      return undefined;
    }
  }

  return {
    /** The provider's subscription handshake: the challenge comes back only to the right token. */
    handshake(query: { 'hub.mode'?: string; 'hub.verify_token'?: string; 'hub.challenge'?: string }): string {
      if (
        query['hub.mode'] !== 'subscribe' ||
        query['hub.challenge'] === undefined ||
        !constantTimeEqual(query['hub.verify_token'] ?? '', inbound.verifyToken)
      ) {
        throw new AppError('signature_invalid', 'The verify token does not match.');
      }
      return query['hub.challenge'];
    },

    /**
     * Stores a signed webhook and applies it, in one transaction, before answering: the provider
     * hears 200 once what it said is kept, and a crash after that loses nothing. When every update
     * needs only the store (the usual case: messages, statuses, echoes), they are applied in that
     * transaction and the webhook is marked processed: one commit, no job. Otherwise (or if applying
     * them fails) the webhook is stored with a `provider_webhook.process` job, which applies it. The
     * same bytes twice (the provider's retry) are stored and processed once.
     */
    async receive(rawBody: Buffer, signature: string | undefined): Promise<{ duplicate: boolean }> {
      if (!inbound.verifySignature(rawBody, signature)) {
        throw new AppError('signature_invalid', signature === undefined ? 'X-Hub-Signature-256 is missing.' : 'X-Hub-Signature-256 does not match the body.');
      }
      const text = rawBody.toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new AppError('malformed_json', 'The body is not valid JSON.');
      }
      const now = clock.now();
      const id = newId('providerWebhook', now.getTime());
      const row = { id, body_sha256: sha256Hex(rawBody), body: text, received_at: now.toISOString(), processed_at: null, updates: null, error: null };
      const updates = localUpdatesOf(body);
      if (updates) {
        try {
          // Stored already marked processed: the mark commits with the updates or not at all.
          const processed = { ...row, processed_at: now.toISOString(), updates: updates.length };
          const fresh = await commitWithRequests(() =>
            db.transaction().execute(async (trx) => {
              if (!(await store.insertIfAbsent(trx, processed))) return false;
              for (const update of updates) await applyIn(trx, update);
              return true;
            }),
          );
          return { duplicate: !fresh };
        } catch (error) {
          // Nothing of it was kept: the webhook is filed for the worker, whose retries and record of
          // failure a request cannot give.
          log.warn({ err: error, provider_webhook_id: id }, 'applying a provider webhook at once failed; queued for the worker');
        }
      }
      const fresh = await db.transaction().execute(async (trx) => {
        if (!(await store.insertIfAbsent(trx, row))) return false;
        await queue.enqueue(trx, providerWebhookProcess, { provider_webhook_id: id });
        return true;
      });
      return { duplicate: !fresh };
    },

    /**
     * The `provider_webhook.process` job. When every update needs only the store (the usual case:
     * messages, statuses, echoes), they are applied, the webhook marked processed and the job settled
     * in one transaction, the job's settle transaction. Otherwise each update runs on its own, in
     * order (a retry redoes only what did not commit), and the mark goes with the job's outcome.
     */
    async process(id: string, context: Pick<JobContext, 'inSettle'>): Promise<void> {
      const row = await store.find(db, id);
      if (!row || row.processed_at !== null) return;
      let updates: ProviderUpdate[];
      try {
        updates = inbound.parse(JSON.parse(row.body));
      } catch (error) {
        // Retrying cannot make a body an envelope: record why and stop.
        log.warn({ err: error, provider_webhook_id: id }, 'provider webhook is not an envelope; kept unprocessed');
        const outcome = { processed_at: clock.now().toISOString(), updates: 0, error: error instanceof Error ? error.message : String(error) };
        context.inSettle((trx) => store.markProcessed(trx, id, outcome));
        return;
      }
      if (updates.every(isLocal)) {
        context.inSettle((trx) => applyAllIn(trx, id, updates));
        return;
      }
      for (const update of updates) await applyAlone(update);
      const outcome = { processed_at: clock.now().toISOString(), updates: updates.length, error: null };
      context.inSettle((trx) => store.markProcessed(trx, id, outcome));
    },
  };
}

export type ProviderWebhooksService = ReturnType<typeof createProviderWebhooksService>;
