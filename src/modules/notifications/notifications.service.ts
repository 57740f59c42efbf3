import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { NotificationBatchesTable, NotificationsTable } from '../../db/schema.ts';
import type { EventEnvelope } from '../../events/envelope.ts';
import type { EventSink } from '../../events/emit.ts';
import { notificationExpire, notificationSend } from '../../jobs/catalog.ts';
import { JobError } from '../../jobs/job.ts';
import type { Queue } from '../../jobs/queue.ts';
import type { JobContext } from '../../jobs/worker.ts';
import { DAY, HOUR, MINUTE, SECOND, type Clock } from '../../lib/clock.ts';
import { AppError, invalidParam, notFound, type ErrorCode, type ErrorDetail } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Pacer } from '../../provider/pacing.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { Contact, ContactsService } from '../contacts/index.ts';
import { connectionScopeOf, type Actor, type Principal } from '../credentials/principal.ts';
import type { Message, SendingService } from '../messages/index.ts';
import type { ApprovedTemplate, TemplateContent, TemplatesService } from '../templates/index.ts';
import type { TemplateParameters } from '../templates/templates.schemas.ts';
import type { NotificationTarget, NotificationTargetResult, NotificationTargets } from './notification-target.ts';
import {
  NOTIFICATION_STATUSES,
  type CreateBatchInput,
  type CreateNotificationInput,
  type Notification,
  type NotificationBatch,
  type NotificationFilters,
  type NotificationStatus,
  type ReplayInput,
} from './notifications.schemas.ts';
import type { NotificationsStore } from './notifications.store.ts';

/** A notification may be created this far ahead of its send. */
export const MAX_SEND_AHEAD_MS = 35 * DAY;
/** `expires_at` is this long after `send_at` at least, and at most `MAX_LIFETIME_MS`. */
export const MIN_LIFETIME_MS = 30 * SECOND;
export const MAX_LIFETIME_MS = 30 * DAY;
/** The default lifetime by template category; a template the provider gave no category gets utility's. */
export const DEFAULT_LIFETIME_MS = { authentication: 10 * MINUTE, utility: 12 * HOUR, marketing: 24 * HOUR } as const;
/** How long a `dedupe_key` names its notification. */
export const DEDUPE_WINDOW_MS = 24 * HOUR;

/** Statuses in which a notification waits for its send job: cancel and the expiry timer act on these. */
const WAITING: NotificationStatus[] = ['scheduled', 'queued'];

interface StoredTemplate {
  id: string;
  name: string;
  language: string;
  category: string | null;
  parameters: TemplateParameters;
}

type StoredError = { code: string; message: string };

export function toNotification(row: NotificationsTable): Notification {
  return {
    id: row.id,
    object: 'notification',
    connection_id: row.connection_id,
    contact_id: row.contact_id,
    to: row.to,
    template: JSON.parse(row.template) as StoredTemplate,
    status: row.status as NotificationStatus,
    send_at: row.send_at,
    expires_at: row.expires_at,
    batch_id: row.batch_id,
    dedupe_key: row.dedupe_key,
    schedule_id: row.schedule_id,
    occurrence_id: row.occurrence_id,
    message_id: row.message_id,
    attempts: row.attempts,
    error: row.error === null ? null : (JSON.parse(row.error) as StoredError),
    replay_of: row.replay_of,
    replayed_by: row.replayed_by,
    sent_at: row.sent_at,
    delivered_at: row.delivered_at,
    failed_at: row.failed_at,
    expired_at: row.expired_at,
    canceled_at: row.canceled_at,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
  };
}

/** One recipient of a create, a batch or an occurrence, before its checks. */
interface RecipientInput {
  contact_id?: string | undefined;
  to?: string | undefined;
  parameters?: TemplateParameters | undefined;
  dedupe_key?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
}

/** Where a request names each recipient and its parameters, for the `param` of a refusal. */
interface RecipientParams {
  field(index: number, name: 'to' | 'contact_id' | 'dedupe_key'): string;
  parameters(index: number): string;
}

/** A single notification's: the body's own fields. */
const SINGLE_PARAMS: RecipientParams = { field: (_index, name) => `/${name}`, parameters: () => '/template/parameters' };

/** A batch's: each recipient carries its own fields and parameters. */
const BATCH_PARAMS: RecipientParams = { field: (index, name) => `/recipients/${index}/${name}`, parameters: (index) => `/recipients/${index}/parameters` };

/** A schedule's target: recipients listed in `to` or `contact_ids`, one set of parameters for all. */
function targetParams(param: string): RecipientParams {
  return {
    field: (index, name) => (name === 'contact_id' ? `${param}/contact_ids/${index}` : `${param}/${name}/${index}`),
    parameters: () => `${param}/parameters`,
  };
}

/** What every notification of one request shares, checked. */
interface Plan {
  organizationId: string;
  connectionId: string;
  mode: 'live' | 'test';
  ceilingPerSecond: number;
  sendAt: Date;
  expiresAt: Date;
  template: Omit<StoredTemplate, 'parameters'>;
  /** Checks one recipient's parameters against the template, read once for the whole request. */
  prepare: ApprovedTemplate['prepare'];
  scheduleId: string | null;
  occurrenceId: string | null;
}

/** The live contacts a request's recipients name, read together. */
type KnownContacts = { byId: Map<string, Contact>; byPhoneNumber: Map<string, Contact> };

/** A recipient that passed its checks. */
interface CheckedRecipient {
  index: number;
  to: string;
  contactId: string | null;
  parameters: TemplateParameters;
  dedupeKey: string | null;
  metadata: Record<string, unknown>;
}

interface RefusedRecipient {
  index: number;
  code: string;
  message: string;
  param: string | null;
}

export interface NotificationsServiceDeps {
  db: Db;
  store: NotificationsStore;
  clock: Clock;
  events: EventSink;
  queue: Pick<Queue, 'enqueue' | 'enqueueMany' | 'cancel'>;
  audit: Pick<AuditEventsService, 'record'>;
  isUniqueViolation: (error: unknown) => boolean;
  connections: Pick<ConnectionsService, 'getForReference'>;
  contacts: Pick<ContactsService, 'findRecipients' | 'findByPhoneNumber'>;
  templates: Pick<TemplatesService, 'prepareSend' | 'findApprovedForSend'>;
  sending: Pick<SendingService, 'storeForRail' | 'deliver' | 'abandon' | 'passGuards'>;
  pacer: Pick<Pacer, 'intervalMs'>;
}

const sendJobKey = (id: string) => `notification.send:${id}`;

/**
 * How long before its turn in the lane a send job may be claimed (never before `send_at`). The
 * worker looks for due jobs every so often; a job claimed only at its turn would leave the number
 * idle between two looks. Claimed a little ahead, it waits its turn in the number's pacer, which
 * spaces the sends at the ceiling, and the worker's next look finds the next ones in time.
 */
export const SEND_LEAD_MS = SECOND;

function runAtOf(planned: { sendAt: Date }, row: { due_at: string }): Date {
  return new Date(Math.max(planned.sendAt.getTime(), new Date(row.due_at).getTime() - SEND_LEAD_MS));
}

/**
 * The notification rail (docs/notifications.md): template messages that must arrive on time or not
 * at all. A notification is checked and stored with its send job (at `send_at`, moved along the
 * number's lane) and its expiry timer; the job files the message in its conversation and sends it
 * through the messages module with `expires_at` as its deadline. The message's own events move the
 * notification on (`onMessageEvent`), in the transaction that moved the message.
 */
export function createNotificationsService(deps: NotificationsServiceDeps) {
  const { db, store, clock, events, queue, audit, isUniqueViolation, connections, contacts, templates, sending, pacer } = deps;

  const now = () => clock.now();

  async function emit(
    trx: Trx,
    type: 'notification.sent' | 'notification.delivered' | 'notification.failed' | 'notification.expired',
    row: NotificationsTable,
  ) {
    await events.emit(trx, { type, organizationId: row.organization_id, connectionId: row.connection_id, object: toNotification(row) });
  }

  /**
   * The notifications' own principal for work nobody is calling for (a schedule's occurrence): it
   * sees what its organization owns, as an organization key of either mode would.
   */
  function organizationPrincipal(organizationId: string): Principal {
    return {
      kind: 'organization_key',
      credentialId: 'notification_rail',
      organizationId,
      memberId: null,
      role: null,
      mode: null,
      connectionId: null,
      scopes: new Set(),
    };
  }

  function parseTime(value: string | undefined, fallback: Date): Date {
    return value === undefined ? fallback : new Date(value);
  }

  /** The checks every notification of a request shares: the connection, the times, the template's existence. */
  async function plan(
    executor: Db,
    principal: Principal,
    input: { connection_id?: string | undefined; send_at?: string | undefined; expires_at?: string | undefined },
    template: { id?: string | undefined; name?: string | undefined; language?: string | undefined },
    origin: { scheduleId: string | null; occurrenceId: string | null } = { scheduleId: null, occurrenceId: null },
  ): Promise<Plan> {
    const connectionId = input.connection_id ?? principal.connectionId;
    if (connectionId === null) throw invalidParam('/connection_id', 'is required unless a connection key sends', 'required');
    const connection = await connections.getForReference(executor, principal, connectionId, '/connection_id');
    if (connection.status === 'needs_reauth') throw new AppError('connection_needs_reauth', undefined, { param: '/connection_id' });
    if (connection.status !== 'connected') throw new AppError('connection_inactive', 'The connection is not connected.', { param: '/connection_id' });
    const at = now();
    const asked = parseTime(input.send_at, at);
    if (asked.getTime() - at.getTime() > MAX_SEND_AHEAD_MS) throw invalidParam('/send_at', 'is more than 35 days ahead', 'out_of_range');
    // A time already past means now: a client's clock a little behind ours must not be refused.
    const sendAt = asked < at ? at : asked;
    const found = await templates.findApprovedForSend(executor, { organizationId: principal.organizationId, connectionId }, template);
    const category = found.category;
    const lifetime = DEFAULT_LIFETIME_MS[category ?? 'utility'];
    const expiresAt = parseTime(input.expires_at, new Date(sendAt.getTime() + lifetime));
    const lifetimeMs = expiresAt.getTime() - sendAt.getTime();
    if (lifetimeMs < MIN_LIFETIME_MS) throw invalidParam('/expires_at', `must be at least 30 seconds after send_at (${sendAt.toISOString()})`, 'out_of_range');
    if (lifetimeMs > MAX_LIFETIME_MS) throw invalidParam('/expires_at', `must be at most 30 days after send_at (${sendAt.toISOString()})`, 'out_of_range');
    return {
      organizationId: principal.organizationId,
      connectionId,
      mode: connection.test ? 'test' : 'live',
      ceilingPerSecond: connection.throughput_per_second,
      sendAt,
      expiresAt,
      template: { id: found.id, name: found.name, language: found.language, category: found.category },
      prepare: found.prepare,
      ...origin,
    };
  }

  /** One recipient's checks: who it is, its parameters against the template, its consent. */
  /** The contacts the recipients name, in two queries however many recipients there are. */
  function contactsOf(executor: Db, organizationId: string, recipients: readonly RecipientInput[]): Promise<KnownContacts> {
    const ids = new Set<string>();
    const phoneNumbers = new Set<string>();
    for (const recipient of recipients) {
      if (recipient.contact_id !== undefined) ids.add(recipient.contact_id);
      if (recipient.to !== undefined) phoneNumbers.add(recipient.to);
    }
    return contacts.findRecipients(executor, organizationId, { ids: [...ids], phoneNumbers: [...phoneNumbers] });
  }

  /** One recipient's checks: who it is, its parameters against the template, its consent. */
  function checkRecipient(known: KnownContacts, planned: Plan, recipient: RecipientInput, index: number, params: RecipientParams): CheckedRecipient {
    const at = (name: 'to' | 'contact_id') => params.field(index, name);
    if ((recipient.contact_id === undefined) === (recipient.to === undefined)) {
      throw invalidParam(
        recipient.to === undefined ? at('contact_id') : at('to'),
        recipient.to === undefined ? 'or to is required' : 'cannot be given with contact_id',
        recipient.to === undefined ? 'required' : 'exclusive',
      );
    }
    let contact: Contact | undefined;
    if (recipient.contact_id !== undefined) {
      contact = known.byId.get(recipient.contact_id);
      if (!contact) throw new AppError('resource_not_found', `No such contact: ${recipient.contact_id}.`, { param: at('contact_id') });
    } else contact = known.byPhoneNumber.get(recipient.to!);
    const parameters = recipient.parameters ?? {};
    planned.prepare(parameters, params.parameters(index));
    if (planned.template.category === 'marketing' && contact?.consent.marketing.status === 'opted_out') {
      throw new AppError('contact_opted_out', `The contact opted out of marketing on ${contact.consent.marketing.since}.`, {
        param: recipient.contact_id === undefined ? at('to') : at('contact_id'),
      });
    }
    return {
      index,
      to: contact?.phone_number ?? recipient.to!,
      contactId: contact?.id ?? null,
      parameters,
      dedupeKey: recipient.dedupe_key ?? null,
      metadata: recipient.metadata ?? {},
    };
  }

  /** The checks of a request with one recipient (a create, a replay): a refusal is the request's. */
  async function checkOnly(executor: Db, planned: Plan, recipient: RecipientInput): Promise<CheckedRecipient> {
    return checkRecipient(await contactsOf(executor, planned.organizationId, [recipient]), planned, recipient, 0, SINGLE_PARAMS);
  }

  /**
   * When the sends of `count` notifications start on this number: at `send_at`, or after the waiting
   * notifications that would still be going by then, so that two batches queued together
   * do not share the ceiling (their jobs would wait on the pacer, holding the worker). Authentication
   * notifications take no place in the lane: a one-time code is never queued behind a campaign, and
   * the pacer lets it in between the campaign's sends.
   */
  async function laneStart(executor: Db, planned: Plan, count: number, intervalMs: number): Promise<number> {
    const start = planned.sendAt.getTime();
    if (planned.template.category === 'authentication') return start;
    const last = await store.laneEnd(
      executor,
      planned.connectionId,
      new Date(start).toISOString(),
      new Date(start + count * intervalMs).toISOString(),
      WAITING,
    );
    return last === undefined ? start : Math.max(start, new Date(last).getTime() + intervalMs);
  }

  function rowOf(
    planned: Plan,
    recipient: CheckedRecipient,
    dueAt: Date,
    batch: { id: string } | undefined,
    createdAt: string,
    replayOf: string | null,
  ): NotificationsTable {
    const scheduled = planned.sendAt.getTime() > new Date(createdAt).getTime();
    return {
      id: newId('notification', new Date(createdAt).getTime()),
      organization_id: planned.organizationId,
      connection_id: planned.connectionId,
      mode: planned.mode,
      contact_id: recipient.contactId,
      to: recipient.to,
      template_id: planned.template.id,
      template: JSON.stringify({ ...planned.template, parameters: recipient.parameters } satisfies StoredTemplate),
      status: scheduled ? 'scheduled' : 'queued',
      send_at: planned.sendAt.toISOString(),
      due_at: dueAt.toISOString(),
      expires_at: planned.expiresAt.toISOString(),
      batch_id: batch?.id ?? null,
      batch_index: batch ? recipient.index : null,
      dedupe_key: recipient.dedupeKey,
      dedupe_claim: recipient.dedupeKey,
      schedule_id: planned.scheduleId,
      occurrence_id: planned.occurrenceId,
      message_id: null,
      attempts: 0,
      error: null,
      replay_of: replayOf,
      replayed_by: null,
      sent_at: null,
      delivered_at: null,
      failed_at: null,
      expired_at: null,
      canceled_at: null,
      metadata: JSON.stringify(recipient.metadata),
      created_at: createdAt,
      updated_at: createdAt,
    };
  }

  /** Stores checked notifications with their send jobs (spaced along the lane) and one expiry timer. */
  async function insert(
    trx: Trx,
    planned: Plan,
    recipients: readonly CheckedRecipient[],
    options: { batch?: NotificationBatchesTable; replayOf?: string } = {},
  ): Promise<NotificationsTable[]> {
    const createdAt = now().toISOString();
    const intervalMs = pacer.intervalMs(planned.ceilingPerSecond);
    const start = await laneStart(trx, planned, recipients.length, intervalMs);
    const rows = recipients.map((recipient, position) =>
      rowOf(planned, recipient, new Date(start + Math.round(position * intervalMs)), options.batch, createdAt, options.replayOf ?? null),
    );
    if (options.batch) await store.insertBatch(trx, options.batch);
    await store.insertAll(trx, rows);
    await queue.enqueueMany(
      trx,
      notificationSend,
      rows.map((row) => ({ payload: { notification_id: row.id }, runAt: runAtOf(planned, row), dedupeKey: sendJobKey(row.id) })),
    );
    const timer = options.batch ? { batch_id: options.batch.id } : { notification_id: rows[0]!.id };
    await queue.enqueue(trx, notificationExpire, timer, { runAt: planned.expiresAt });
    return rows;
  }

  /**
   * A dedupe key of the last 24 hours answers its notification. Claims older than that are released
   * first, in this transaction, so the partial unique index sees only live ones.
   */
  async function claimsOf(trx: Db, planned: Plan, keys: readonly string[]): Promise<Map<string, NotificationsTable>> {
    const cutoff = new Date(now().getTime() - DEDUPE_WINDOW_MS).toISOString();
    await store.releaseClaims(trx, planned.organizationId, planned.mode, keys, cutoff);
    const held = await store.findClaims(trx, planned.organizationId, planned.mode, keys);
    return new Map(held.map((row) => [row.dedupe_claim!, row]));
  }

  function refusal(error: unknown, index: number): RefusedRecipient {
    if (!(error instanceof AppError)) throw error;
    return { index, code: error.code, message: error.message, param: error.param };
  }

  /** Checks each recipient; a refusal of the template or connection itself is the whole request's. */
  async function checkAll(
    executor: Db,
    planned: Plan,
    recipients: readonly RecipientInput[],
    params: RecipientParams,
  ): Promise<{ accepted: CheckedRecipient[]; refused: RefusedRecipient[] }> {
    const accepted: CheckedRecipient[] = [];
    const refused: RefusedRecipient[] = [];
    const seen = new Map<string, number>();
    const known = await contactsOf(executor, planned.organizationId, recipients);
    for (const [index, recipient] of recipients.entries()) {
      try {
        const checked = checkRecipient(known, planned, recipient, index, params);
        const earlier = checked.dedupeKey === null ? undefined : seen.get(checked.dedupeKey);
        if (earlier !== undefined) throw invalidParam(params.field(index, 'dedupe_key'), `repeats the dedupe_key of recipient ${earlier}`, 'duplicate');
        if (checked.dedupeKey !== null) seen.set(checked.dedupeKey, index);
        accepted.push(checked);
      } catch (error) {
        if (error instanceof AppError && error.param?.startsWith('/template') && !error.param.startsWith('/template/parameters')) throw error;
        refused.push(refusal(error, index));
      }
    }
    if (accepted.length > 0) {
      const held = await claimsOf(
        executor,
        planned,
        accepted.flatMap((recipient) => (recipient.dedupeKey === null ? [] : [recipient.dedupeKey])),
      );
      for (const recipient of [...accepted]) {
        const holder = recipient.dedupeKey === null ? undefined : held.get(recipient.dedupeKey);
        if (!holder) continue;
        accepted.splice(accepted.indexOf(recipient), 1);
        refused.push({
          index: recipient.index,
          code: 'resource_exists',
          message: `The dedupe_key ${recipient.dedupeKey} already names ${holder.id} (created ${holder.created_at}).`,
          param: params.field(recipient.index, 'dedupe_key'),
        });
      }
      refused.sort((a, b) => a.index - b.index);
    }
    return { accepted, refused };
  }

  function refusedBatchError(refused: readonly RefusedRecipient[], total: number): AppError {
    const details: ErrorDetail[] = refused.slice(0, 10).map(({ param, code, message }) => ({ param: param ?? '/recipients', code, message }));
    return new AppError('validation_failed', `${refused.length} of ${total} recipients were refused; nothing was created.`, {
      param: refused[0]?.param ?? '/recipients',
      details,
    });
  }

  /**
   * A target's refusal: the recipient's own error when there is one recipient, or when it is about the
   * parameters all recipients share (then every recipient fails alike); the batch's otherwise.
   */
  function targetRefusal(refused: readonly RefusedRecipient[], total: number, sharedParameters: string): AppError {
    const [first] = refused;
    if (first && (total === 1 || first.param?.startsWith(sharedParameters))) {
      return new AppError(first.code as ErrorCode, first.message, first.param === null ? {} : { param: first.param });
    }
    return refusedBatchError(refused, total);
  }

  async function batchView(executor: Db, row: NotificationBatchesTable): Promise<NotificationBatch> {
    const { ids, counts } = await store.batchContents(executor, row.id);
    return {
      id: row.id,
      object: 'notification_batch',
      connection_id: row.connection_id,
      template: JSON.parse(row.template) as NotificationBatch['template'],
      mode: row.atomicity as NotificationBatch['mode'],
      recipient_count: row.recipient_count,
      notification_ids: ids,
      errors: JSON.parse(row.errors) as NotificationBatch['errors'],
      counts: Object.fromEntries(NOTIFICATION_STATUSES.map((status) => [status, counts.get(status) ?? 0])) as NotificationBatch['counts'],
      send_at: row.send_at,
      expires_at: row.expires_at,
      schedule_id: row.schedule_id,
      occurrence_id: row.occurrence_id,
      metadata: JSON.parse(row.metadata) as Record<string, unknown>,
      created_at: row.created_at,
    };
  }

  /** Creates a batch in `trx`: answers it, or throws the all-or-nothing refusal. */
  async function createBatchIn(
    trx: Trx,
    principal: Principal,
    planned: Plan,
    input: { recipients: readonly RecipientInput[]; atomicity: 'all_or_nothing' | 'partial'; metadata: Record<string, unknown> },
    params: RecipientParams = BATCH_PARAMS,
  ): Promise<NotificationBatchesTable> {
    const { accepted, refused } = await checkAll(trx, planned, input.recipients, params);
    if (refused.length > 0 && (input.atomicity === 'all_or_nothing' || accepted.length === 0)) throw refusedBatchError(refused, input.recipients.length);
    const batch: NotificationBatchesTable = {
      id: newId('notificationBatch', now().getTime()),
      organization_id: planned.organizationId,
      connection_id: planned.connectionId,
      mode: planned.mode,
      atomicity: input.atomicity,
      template: JSON.stringify(planned.template),
      recipient_count: input.recipients.length,
      errors: JSON.stringify(refused),
      send_at: planned.sendAt.toISOString(),
      expires_at: planned.expiresAt.toISOString(),
      schedule_id: planned.scheduleId,
      occurrence_id: planned.occurrenceId,
      metadata: JSON.stringify(input.metadata),
      created_at: now().toISOString(),
    };
    await insert(trx, planned, accepted, { batch });
    return batch;
  }

  /** Moves a notification by compare-and-set and announces it; answers the row as moved, or undefined. */
  async function move(
    trx: Trx,
    row: NotificationsTable,
    from: readonly NotificationStatus[],
    to: NotificationStatus,
    changes: Partial<NotificationsTable> = {},
  ): Promise<NotificationsTable | undefined> {
    const at = now().toISOString();
    const stamp = { sent: 'sent_at', delivered: 'delivered_at', failed: 'failed_at', expired: 'expired_at', canceled: 'canceled_at' } as const;
    const field = stamp[to as keyof typeof stamp];
    const update = { status: to, updated_at: at, ...(field ? { [field]: at } : {}), ...changes };
    if (!(await store.transition(trx, row.id, from, update))) return undefined;
    return { ...row, ...update };
  }

  /** Ends a notification whose time ran out before it was sent, and the message made for it if any. */
  async function expire(trx: Trx, row: NotificationsTable, from: readonly NotificationStatus[]): Promise<boolean> {
    const expired = await move(trx, row, from, 'expired');
    if (!expired) return false;
    await emit(trx, 'notification.expired', expired);
    await queue.cancel(trx, sendJobKey(row.id));
    if (row.message_id) {
      await sending.abandon(trx, row.message_id, {
        code: null,
        title: 'expired',
        message: `Notification ${row.id} expired at ${row.expires_at} before it could be sent.`,
        details: null,
      });
    }
    return true;
  }

  async function fail(trx: Trx, row: NotificationsTable, from: readonly NotificationStatus[], error: StoredError): Promise<void> {
    const failed = await move(trx, row, from, 'failed', { error: JSON.stringify(error) });
    if (failed) await emit(trx, 'notification.failed', failed);
  }

  /**
   * The send job's first step, in one transaction: checks that the notification may still go (the
   * template approved, the contact not opted out of marketing, the connection connected), files its
   * message the first time, and marks it `sending`. Answers the message to send, or undefined when
   * there is nothing to send (canceled, expired, refused).
   */
  async function claimForSending(id: string): Promise<{ row: NotificationsTable; messageId: string } | undefined> {
    return db.transaction().execute(async (trx) => {
      const row = await store.findById(trx, id);
      if (!row) return undefined;
      if (row.status === 'sending') {
        // The attempt before was lost, or put it back: its message is what is sent.
        await store.update(trx, id, { attempts: row.attempts + 1, updated_at: now().toISOString() });
        return row.message_id ? { row, messageId: row.message_id } : undefined;
      }
      if (!WAITING.includes(row.status as NotificationStatus)) return undefined;
      // A batch's send_at has come: every one of it still scheduled is queued now, waiting its turn
      // in the lane (the first of its jobs does this for all; the others find nothing to move).
      if (row.status === 'scheduled' && row.batch_id !== null) await store.queueBatch(trx, row.batch_id, now().toISOString());
      if (now().toISOString() >= row.expires_at) {
        await expire(trx, row, WAITING);
        return undefined;
      }
      let messageId = row.message_id;
      if (messageId === null) {
        const made = await fileMessage(trx, row);
        if ('error' in made) {
          await fail(trx, row, WAITING, made.error);
          return undefined;
        }
        messageId = made.message.id;
        row.contact_id = made.message.contact_id;
      }
      const sendingRow = await move(trx, row, WAITING, 'sending', { message_id: messageId, contact_id: row.contact_id, attempts: row.attempts + 1 });
      return sendingRow ? { row: sendingRow, messageId } : undefined;
    });
  }

  /** The checks of send time, then the message in the notification's conversation. */
  async function fileMessage(trx: Trx, row: NotificationsTable): Promise<{ message: Message } | { error: StoredError }> {
    const template = JSON.parse(row.template) as StoredTemplate;
    const principal = organizationPrincipal(row.organization_id);
    let content: TemplateContent;
    try {
      const connection = await connections.getForReference(trx, principal, row.connection_id, '/connection_id');
      if (connection.status !== 'connected') throw new AppError(connection.status === 'needs_reauth' ? 'connection_needs_reauth' : 'connection_inactive');
      await sending.passGuards(trx, { organizationId: row.organization_id, connectionId: row.connection_id, test: connection.test });
      const prepared = await templates.prepareSend(
        trx,
        { organizationId: row.organization_id, connectionId: row.connection_id },
        { id: template.id, ...template.parameters },
      );
      const contact = await contacts.findByPhoneNumber(trx, row.organization_id, row.to);
      if (prepared.category === 'marketing' && contact?.consent.marketing.status === 'opted_out') {
        throw new AppError('contact_opted_out', `The contact opted out of marketing on ${contact.consent.marketing.since}.`);
      }
      content = prepared.content;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return { error: { code: error.code, message: error.message } };
    }
    const message = await sending.storeForRail(trx, {
      organizationId: row.organization_id,
      connectionId: row.connection_id,
      to: row.to,
      content,
      shown: { id: template.id, name: template.name, language: template.language, ...template.parameters },
      metadata: { notification_id: row.id },
    });
    return { message };
  }

  /** The message's facts, in their transaction: the notification follows its message. */
  async function onMessageEvent(trx: Trx, event: EventEnvelope): Promise<void> {
    const message = event.data.object as Message;
    if (message.direction !== 'outbound') return;
    const sentNow = event.type === 'message.sent';
    const reached = event.type === 'message.status' && (message.status === 'delivered' || message.status === 'read');
    const failedNow = event.type === 'message.status' && message.status === 'failed';
    if (!sentNow && !reached && !failedNow) return;
    let row = await store.findByMessage(trx, message.id);
    if (!row) return;
    if (sentNow || reached) {
      // A status may overtake the provider's answer: the notification was sent before it was delivered.
      const sent = await move(trx, row, ['sending'], 'sent');
      if (sent) {
        await emit(trx, 'notification.sent', sent);
        row = sent;
      }
      if (reached) {
        const delivered = await move(trx, row, ['sent'], 'delivered');
        if (delivered) await emit(trx, 'notification.delivered', delivered);
      }
      return;
    }
    const error = message.error;
    await fail(trx, row, ['sending', 'sent'], {
      code: error?.code === null || error?.code === undefined ? (error?.title ?? 'provider_rejected') : String(error.code),
      message: error?.message ?? error?.title ?? 'The provider reported the message failed.',
    });
  }

  async function getRow(principal: Principal, id: string): Promise<NotificationsTable> {
    const row = await store.find(db, connectionScopeOf(principal), id);
    if (!row) throw notFound('notification');
    return row;
  }

  /** Runs `create` in a savepoint; two requests racing for one dedupe key end with the winner's notification. */
  async function withDedupeRace<T>(create: (trx: Trx) => Promise<T>, winner: () => Promise<T | undefined>): Promise<T> {
    try {
      return await db.transaction().execute(create);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      const found = await winner();
      if (found === undefined) throw error;
      return found;
    }
  }

  const targets: NotificationTargets = {
    async checkTarget(principal: Principal, target: NotificationTarget, param: string): Promise<NotificationTarget> {
      const recipients = recipientsOf(target);
      const planned = await plan(db, principal, target, target.template).catch((error: unknown) => {
        throw reparam(error, param);
      });
      const { refused } = await checkAll(db, planned, recipients, targetParams(param)).catch((error: unknown) => {
        throw reparam(error, param);
      });
      if (refused.length > 0) throw targetRefusal(refused, recipients.length, `${param}/parameters`);
      return { ...target, connection_id: planned.connectionId };
    },

    async createForOccurrence(trx, input): Promise<NotificationTargetResult> {
      const done = await store.findOccurrenceResult(trx, input.occurrenceId);
      if (done) return done.batchId ? { batch_id: done.batchId } : { notification_id: done.notificationId! };
      const principal = organizationPrincipal(input.organizationId);
      const { target } = input;
      const recipients = recipientsOf(target);
      const planned = await plan(trx, principal, { connection_id: target.connection_id, send_at: input.sendAt.toISOString() }, target.template, {
        scheduleId: input.scheduleId,
        occurrenceId: input.occurrenceId,
      });
      if (recipients.length === 1) {
        const { accepted, refused } = await checkAll(trx, planned, recipients, targetParams('/target'));
        if (refused.length > 0) throw targetRefusal(refused, 1, '/target/parameters');
        const [row] = await insert(trx, planned, accepted);
        return { notification_id: row!.id };
      }
      const batch = await createBatchIn(
        trx,
        principal,
        planned,
        { recipients, atomicity: 'partial', metadata: target.metadata ?? {} },
        targetParams('/target'),
      );
      return { batch_id: batch.id };
    },
  };

  function recipientsOf(target: NotificationTarget): RecipientInput[] {
    const base = { parameters: target.parameters, metadata: target.metadata };
    if ((target.to === undefined) === (target.contact_ids === undefined)) {
      throw invalidParam(
        target.to === undefined ? '/target/to' : '/target/contact_ids',
        target.to === undefined ? 'or contact_ids is required' : 'cannot be given with to',
        target.to === undefined ? 'required' : 'exclusive',
      );
    }
    return target.to ? target.to.map((to) => ({ ...base, to })) : target.contact_ids!.map((contactId) => ({ ...base, contact_id: contactId }));
  }

  /** An error about a field of the notification body, moved under the schedule's `target`. */
  function reparam(error: unknown, param: string): unknown {
    if (!(error instanceof AppError) || error.param === null || error.param.startsWith(param)) return error;
    const moved = (at: string) => `${param}${at}`;
    return new AppError(error.code, error.message.replaceAll(error.param, moved(error.param)), {
      param: moved(error.param),
      details: error.details.map((detail) => ({ ...detail, param: detail.param.startsWith(param) ? detail.param : moved(detail.param) })),
      extra: error.extra,
    });
  }

  return {
    ...targets,

    /** Answers the notification, and whether this call created it (a held dedupe key answers the existing one). */
    async create(actor: Actor, input: CreateNotificationInput): Promise<{ notification: Notification; created: boolean }> {
      const { principal } = actor;
      const { parameters = {}, ...template } = input.template;
      const planned = await plan(db, principal, input, template);
      const recipient = await checkOnly(db, planned, { ...input, parameters });
      const existing = async () => {
        if (recipient.dedupeKey === null) return undefined;
        const held = (await claimsOf(db, planned, [recipient.dedupeKey])).get(recipient.dedupeKey);
        return held && { notification: toNotification(held), created: false };
      };
      const found = await existing();
      if (found) return found;
      return withDedupeRace(async (trx) => {
        const [row] = await insert(trx, planned, [recipient]);
        return { notification: toNotification(row!), created: true };
      }, existing);
    },

    async createBatch(actor: Actor, input: CreateBatchInput): Promise<NotificationBatch> {
      const { principal } = actor;
      const planned = await plan(db, principal, input, input.template);
      const batch = await db
        .transaction()
        .execute((trx) =>
          createBatchIn(trx, principal, planned, { recipients: input.recipients, atomicity: input.mode ?? 'all_or_nothing', metadata: input.metadata ?? {} }),
        );
      return batchView(db, batch);
    },

    async get(principal: Principal, id: string): Promise<Notification> {
      return toNotification(await getRow(principal, id));
    },

    async getBatch(principal: Principal, id: string): Promise<NotificationBatch> {
      const row = await store.findBatch(db, connectionScopeOf(principal), id);
      if (!row) throw notFound('notification batch');
      return batchView(db, row);
    },

    async list(principal: Principal, filters: NotificationFilters, page: PageRequest): Promise<Page<Notification>> {
      const rows = await store.list(
        db,
        connectionScopeOf(principal),
        {
          status: filters.status,
          batchId: filters.batch_id,
          scheduleId: filters.schedule_id,
          connectionId: filters.connection_id,
          contactId: filters.contact_id,
          templateId: filters.template_id,
        },
        page,
      );
      return mapPage(rows, toNotification);
    },

    /** Only a notification still waiting can be canceled; its send job goes with it. */
    async cancel(actor: Actor, id: string): Promise<Notification> {
      const row = await getRow(actor.principal, id);
      return db.transaction().execute(async (trx) => {
        const canceled = await move(trx, row, WAITING, 'canceled');
        if (!canceled) {
          const current = (await store.findById(trx, id))!;
          throw new AppError('invalid_state', `The notification is ${current.status}; only a scheduled or queued notification can be canceled.`, {
            extra: { status: current.status },
          });
        }
        await queue.cancel(trx, sendJobKey(id));
        await audit.record(trx, actor, { action: 'notification.canceled', target: { type: 'notification', id }, data: { previous_status: row.status } });
        return toNotification(canceled);
      });
    },

    /** A failed or expired notification, made again as a new one (`replay_of`); the template is checked as new. */
    async replay(actor: Actor, id: string, input: ReplayInput): Promise<Notification> {
      const { principal } = actor;
      const original = await getRow(principal, id);
      if (original.status !== 'failed' && original.status !== 'expired') {
        throw new AppError('invalid_state', `The notification is ${original.status}; only a failed or expired notification can be replayed.`, {
          extra: { status: original.status },
        });
      }
      if (original.replayed_by !== null) throw new AppError('invalid_state', `The notification was already replayed as ${original.replayed_by}.`);
      const template = JSON.parse(original.template) as StoredTemplate;
      const planned = await plan(db, principal, { connection_id: original.connection_id, ...input }, { id: template.id });
      const recipient = await checkOnly(db, planned, {
        to: original.to,
        parameters: template.parameters,
        metadata: JSON.parse(original.metadata) as Record<string, unknown>,
      });
      return db.transaction().execute(async (trx) => {
        const [row] = await insert(trx, planned, [recipient], { replayOf: original.id });
        const marked = await store.markReplayed(trx, original.id, row!.id);
        if (!marked) throw new AppError('invalid_state', 'The notification was replayed by another request meanwhile.');
        return toNotification(row!);
      });
    },

    /** The send job: sends the notification's message unless it was canceled, expired or refused meanwhile. */
    async send(id: string, context: JobContext): Promise<void> {
      const claimed = await claimForSending(id);
      if (!claimed) return;
      const { row, messageId } = claimed;
      let outcome: 'done' | 'deadline_passed';
      try {
        outcome = await sending.deliver(messageId, context, new Date(row.expires_at));
      } catch (error) {
        // A throttle or an outage: back to queued, for the job's next attempt while time remains
        // (the expiry timer ends it if none is left).
        await db.transaction().execute((trx) => store.transition(trx, id, ['sending'], { status: 'queued', updated_at: now().toISOString() }));
        if (error instanceof JobError && error.retryAt && error.retryAt.toISOString() >= row.expires_at) {
          throw new JobError(`${error.message}; not before the notification expires`, { retryable: true, retryAt: new Date(row.expires_at), cause: error });
        }
        throw error;
      }
      if (outcome === 'deadline_passed') await db.transaction().execute((trx) => expire(trx, row, ['sending']));
    },

    /** The expiry timer: ends whatever of the notification (or batch) still waits at its `expires_at`. */
    async expireDue(target: { notification_id?: string | undefined; batch_id?: string | undefined }): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const rows =
          target.batch_id !== undefined ? await store.waitingOfBatch(trx, target.batch_id, WAITING) : [await store.findById(trx, target.notification_id!)];
        const at = now().toISOString();
        for (const row of rows) if (row && WAITING.includes(row.status as NotificationStatus) && row.expires_at <= at) await expire(trx, row, WAITING);
      });
    },

    onMessageEvent,
  };
}

export type NotificationsService = ReturnType<typeof createNotificationsService>;
