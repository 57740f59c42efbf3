import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.ts';
import type { EventEmitter } from '../../events/emit.ts';
import type { EventEnvelope } from '../../events/envelope.ts';
import { signatureHeader } from '../../events/webhook-signature.ts';
import { webhookDelivery } from '../../jobs/catalog.ts';
import { JobError } from '../../jobs/job.ts';
import type { JobContext, SettleBatchWrite } from '../../jobs/worker.ts';
import { purgeInBatches, type PurgeOptions, type PurgeResult } from '../../jobs/purge.ts';
import { DAY, SECOND, type Clock } from '../../lib/clock.ts';
import { randomToken, type SecretBox } from '../../lib/crypto.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Queue } from '../../jobs/queue.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { UsageFact, UsageService } from '../usage/index.ts';
import type { MailService } from '../mail/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import {
  ALL_EVENT_TYPES,
  type CreateWebhookEndpointInput,
  type EndpointStatus,
  type UpdateWebhookEndpointInput,
  type WebhookDelivery,
  type WebhookEndpoint,
} from './webhook-endpoints.schemas.ts';
import type { WebhookEndpointsStore } from './webhook-endpoints.store.ts';
import type { SendResult } from './webhook-sender.ts';
import { QueuedEnvelopes, toSendable, type SendableEvent } from './envelope-cache.ts';

/** The network side of a delivery, kept behind a port so the rules here never touch a socket. */
export interface DeliveryTransport {
  checkUrl(url: string, param: string): Promise<void>;
  send(url: string, body: string, headers: Record<string, string>): Promise<SendResult>;
}

export const AUTO_DISABLE = { consecutiveFailures: 100, spanMs: DAY } as const;
export const SECRET_ROTATION_OVERLAP_MS = DAY;
/**
 * How long the delivery history keeps an attempt (the spec sets none). Thirty days is far beyond the
 * retry schedule (about 41 hours from first attempt to last), so a failure can be looked into and
 * replayed for weeks after its delivery gave up.
 */
export const DELIVERY_RETENTION_MS = 30 * DAY;

/**
 * How long the delivery job keeps an endpoint (and its opened signing secrets) in memory, so a burst
 * to one endpoint reads and decrypts it once rather than per delivery. A change made in this process
 * (update, rotation, deletion, auto-disable) drops it at once; other processes see it within this time.
 */
export const ENDPOINT_CACHE_TTL_MS = 3 * SECOND;
const MAX_CACHED_ENDPOINTS = 1_024;
// Events never change once stored, so an event read back (one another process queued, or a retry's)
// is kept until crowded out: the other deliveries of a fan-out, which run at the same time, read and
// serialise it once. Those queued here are kept apart until delivered (envelope-cache.ts).
const MAX_CACHED_EVENTS = 1_024;

/** What a delivery needs of an endpoint, as the job's cache holds it. */
interface DeliveryTarget {
  id: string;
  organizationId: string;
  url: string;
  status: string;
  current: string;
  previous: { secret: string; expiresAt: string } | null;
  /**
   * The endpoint had failures counted when it was read, or this process counted one since: a success
   * must reset the count. A failure counted by another process is seen within the cache's time.
   */
  failing: boolean;
  expiresAt: number;
}

/** `*` covers every type, so it stands alone: a list naming others beside it says two things at once. */
function assertEventTypes(events: readonly string[]): void {
  if (events.length > 1 && events.includes(ALL_EVENT_TYPES)) {
    const index = events.indexOf(ALL_EVENT_TYPES);
    throw invalidParam(`/events/${index}`, 'must be the only item: "*" already subscribes to every type', 'invalid_value');
  }
}

/** Keeps at most `max` entries, dropping the oldest inserted first. */
function remember<K, V>(map: Map<K, V>, key: K, value: V, max: number): V {
  if (map.size >= max) map.delete(map.keys().next().value!);
  map.set(key, value);
  return value;
}

function toDelivery(row: WebhookDeliveriesTable): WebhookDelivery {
  return {
    id: row.id,
    object: 'webhook_delivery',
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type,
    attempt: row.attempt,
    replay_of: row.replay_of,
    status: row.status as WebhookDelivery['status'],
    response_status: row.response_status,
    response_excerpt: row.response_excerpt,
    error: row.error,
    duration_ms: row.duration_ms,
    next_retry_at: row.next_retry_at,
    created_at: row.created_at,
    completed_at: row.completed_at,
  };
}

export interface WebhookEndpointsServiceDeps {
  db: Db;
  store: WebhookEndpointsStore;
  clock: Clock;
  secrets: SecretBox;
  transport: DeliveryTransport;
  queue: Pick<Queue, 'enqueueAll'>;
  /** Emits `ping` for the test operation and looks events up for deliveries. */
  events: Pick<EventEmitter, 'emit' | 'find'>;
  audit: Pick<AuditEventsService, 'record'>;
  connections: Pick<ConnectionsService, 'getForReference'>;
  /** Tells the owners when an endpoint is disabled. */
  mail: Pick<MailService, 'notifyOwners'>;
  /** Counts each event delivered to an endpoint (`webhook_deliveries`). */
  usage: Pick<UsageService, 'countAll'>;
}

export function createWebhookEndpointsService(deps: WebhookEndpointsServiceDeps) {
  const { db, store, clock, secrets, transport, queue, events, audit, connections, mail, usage } = deps;

  function toEndpoint(row: WebhookEndpointsTable): WebhookEndpoint {
    const rotating = row.previous_secret_expires_at !== null && row.previous_secret_expires_at > clock.now().toISOString();
    return {
      id: row.id,
      object: 'webhook_endpoint',
      url: row.url,
      events: JSON.parse(row.events) as string[],
      connection_id: row.connection_id,
      description: row.description,
      status: row.status as EndpointStatus,
      disabled_reason: row.disabled_reason,
      secret_rotation: rotating ? { previous_secret_expires_at: row.previous_secret_expires_at! } : null,
      metadata: JSON.parse(row.metadata) as Record<string, unknown>,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  const scopeOf = (principal: Principal) => ({ organizationId: principal.organizationId, connectionId: principal.connectionId });

  async function getRow(executor: Db, principal: Principal, id: string): Promise<WebhookEndpointsTable> {
    const row = await store.find(executor, scopeOf(principal), id);
    if (!row) throw notFound('webhook endpoint');
    return row;
  }

  /** Both secrets sign while a rotation overlaps, so a receiver may switch at its own pace. */
  function signingSecrets(row: WebhookEndpointsTable): string[] {
    const current = secrets.open(row.secret);
    const previousValid = row.previous_secret && row.previous_secret_expires_at && row.previous_secret_expires_at > clock.now().toISOString();
    return previousValid ? [current, secrets.open(row.previous_secret!)] : [current];
  }

  const newSecret = () => `whsec_${randomToken(24)}`;

  const targets = new Map<string, DeliveryTarget>();
  const queuedEnvelopes = new QueuedEnvelopes(clock);
  const envelopes = new Map<string, SendableEvent>();
  // A fan-out's jobs are claimed together and start at once, before any read of their event returns:
  // they share the one read in flight. Keyed by organization too, as the read is scoped by it.
  const envelopesRead = new Map<string, Promise<SendableEvent | undefined>>();

  function toTarget(row: WebhookEndpointsTable): DeliveryTarget {
    return {
      id: row.id,
      organizationId: row.organization_id,
      url: row.url,
      status: row.status,
      current: secrets.open(row.secret),
      previous:
        row.previous_secret && row.previous_secret_expires_at ? { secret: secrets.open(row.previous_secret), expiresAt: row.previous_secret_expires_at } : null,
      failing: row.consecutive_failures > 0,
      expiresAt: clock.now().getTime() + ENDPOINT_CACHE_TTL_MS,
    };
  }

  /** The endpoint as the delivery job sees it: from the cache while fresh, else read and opened again. */
  async function targetFor(id: string): Promise<DeliveryTarget | undefined> {
    const cached = targets.get(id);
    if (cached && cached.expiresAt > clock.now().getTime()) return cached;
    const row = await store.findById(db, id);
    if (!row) {
      targets.delete(id);
      return undefined;
    }
    targets.delete(id);
    return remember(targets, id, toTarget(row), MAX_CACHED_ENDPOINTS);
  }

  /** Called after a change to the endpoint commits, so no delivery here uses what it was before. */
  const forget = (id: string) => void targets.delete(id);

  // The delivery job's writes in its settle transaction, shared by the attempts settled together:
  // their rows in one insert, their usage summed.
  const recordAttempts: SettleBatchWrite<WebhookDeliveriesTable> = { run: (trx, rows) => store.insertDeliveries(trx, rows) };
  const countDeliveries: SettleBatchWrite<UsageFact> = { run: (trx, facts) => usage.countAll(trx, facts) };
  // After the commit, not before: a delivery reading the endpoint meanwhile would cache the old row.
  const forgetAfter = async <T>(id: string, change: Promise<T>): Promise<T> => {
    try {
      return await change;
    } finally {
      forget(id);
    }
  };

  async function envelopeFor(organizationId: string, eventId: string): Promise<SendableEvent | undefined> {
    const cached = queuedEnvelopes.get(eventId) ?? envelopes.get(eventId);
    if (cached) return cached.organizationId === organizationId ? cached : undefined;
    const key = `${organizationId}/${eventId}`;
    let read = envelopesRead.get(key);
    if (!read) {
      read = events
        .find(db, organizationId, eventId)
        .then((event) => event && remember(envelopes, eventId, toSendable(event), MAX_CACHED_EVENTS))
        .finally(() => envelopesRead.delete(key));
      envelopesRead.set(key, read);
    }
    return read;
  }

  function targetSecrets(target: DeliveryTarget): string[] {
    return target.previous && target.previous.expiresAt > clock.now().toISOString() ? [target.current, target.previous.secret] : [target.current];
  }

  /**
   * One attempt: sends the event and answers the attempt's row, complete with what the receiver said.
   * The caller records it: the delivery job in the transaction that settles the job, the person's
   * test and replay at once.
   */
  async function attempt(
    target: { id: string; organizationId: string; url: string; secrets: string[] },
    event: SendableEvent,
    options: { attempt: number; replayOf: string | null; nextRetryAt: Date | null },
  ): Promise<{ row: WebhookDeliveriesTable; ok: boolean; result: SendResult }> {
    const started = clock.now();
    const { body } = event;
    const headers = {
      'service-signature': signatureHeader(body, target.secrets, Math.floor(started.getTime() / 1000)),
      'service-event-id': event.id,
      'service-event-type': event.type,
    };
    const result = await transport.send(target.url, body, headers);
    const ok = result.kind === 'response' && result.status >= 200 && result.status < 300;
    const row: WebhookDeliveriesTable = {
      id: newId('webhookDelivery', started.getTime()),
      organization_id: target.organizationId,
      endpoint_id: target.id,
      event_id: event.id,
      event_type: event.type,
      attempt: options.attempt,
      replay_of: options.replayOf,
      status: ok ? 'succeeded' : 'failed',
      response_status: result.kind === 'response' ? result.status : null,
      response_excerpt: result.kind === 'response' ? result.excerpt : null,
      error: result.kind === 'error' ? result.error : null,
      duration_ms: Math.round(result.durationMs),
      next_retry_at: ok ? null : (options.nextRetryAt?.toISOString() ?? null),
      created_at: started.toISOString(),
      completed_at: clock.now().toISOString(),
    };
    return { row, ok, result };
  }

  /** What the test operation and a replay send to: the endpoint as stored now, not the job's cache. */
  const rowTarget = (row: WebhookEndpointsTable) => ({ id: row.id, organizationId: row.organization_id, url: row.url, secrets: signingSecrets(row) });

  /** Counts a failure and disables the endpoint once failures have run 100 in a row across 24 hours. */
  async function countFailure(endpoint: DeliveryTarget): Promise<boolean> {
    const now = clock.now();
    const counters = await store.recordFailure(db, endpoint.id, now.toISOString());
    endpoint.failing = true;
    if (!counters?.first_failure_at || counters.status !== 'enabled') return false;
    const span = now.getTime() - new Date(counters.first_failure_at).getTime();
    if (counters.consecutive_failures < AUTO_DISABLE.consecutiveFailures || span < AUTO_DISABLE.spanMs) return false;
    const disabled = await db.transaction().execute(async (trx) => {
      if (!(await store.disable(trx, endpoint.id, 'consecutive_failures', now.toISOString()))) return false;
      await audit.record(
        trx,
        { system: true, organizationId: endpoint.organizationId },
        {
          action: 'webhook_endpoint.auto_disabled',
          target: { type: 'webhook_endpoint', id: endpoint.id },
          data: { url: endpoint.url, consecutive_failures: counters.consecutive_failures, failing_since: counters.first_failure_at },
        },
      );
      await mail.notifyOwners(trx, endpoint.organizationId, {
        subject: 'A webhook endpoint was disabled',
        text:
          `Deliveries to ${endpoint.url} (${endpoint.id}) failed ${counters.consecutive_failures} times in a row ` +
          `since ${counters.first_failure_at}, so the endpoint was disabled and no further events are sent to it.\n\n` +
          'Fix the receiver, then enable the endpoint again (PATCH /v1/webhook-endpoints/{id} with {"status": "enabled"}).',
      });
      return true;
    });
    if (disabled) forget(endpoint.id);
    return disabled;
  }

  /**
   * One automatic attempt of one event at one endpoint (the delivery job's). The endpoint comes from a
   * short cache (`ENDPOINT_CACHE_TTL_MS`); the URL is still checked by the sender on every attempt.
   * The attempt's row (and a success's reset of the failure count) is written in the transaction
   * that settles the job, so attempt and job status commit together, in one commit.
   */
  async function deliverOnce(payload: DeliveryPayload, context: DeliveryContext): Promise<void> {
    const endpoint = await targetFor(payload.endpoint_id);
    // Deleted since the event was emitted: nothing to send, and its history went with it.
    if (!endpoint) return;
    const event = await envelopeFor(endpoint.organizationId, payload.event_id);
    if (!event) return;
    if (context.previousAttemptLost) {
      // The worker running the attempt before this one died mid-way, so nothing recorded it: the
      // history still shows every attempt, with an outcome nobody knows. Recorded even when the
      // endpoint was disabled since: that attempt was made while it was enabled.
      const at = clock.now().toISOString();
      const lost: WebhookDeliveriesTable = {
        id: newId('webhookDelivery', clock.now().getTime()),
        organization_id: endpoint.organizationId,
        endpoint_id: endpoint.id,
        event_id: event.id,
        event_type: event.type,
        attempt: context.attempt - 1,
        replay_of: null,
        status: 'failed',
        response_status: null,
        response_excerpt: null,
        error: 'worker_lost',
        duration_ms: null,
        next_retry_at: null,
        created_at: at,
        completed_at: at,
      };
      context.inSettleBatch(recordAttempts, lost);
    }
    // Disabled since the event was emitted: nothing to send, nothing to retry.
    if (endpoint.status !== 'enabled') return;
    const retryAt = context.attempt < context.maxAttempts ? new Date(clock.now().getTime() + webhookDelivery.retry.delayMs(context.attempt)) : null;
    const target = { id: endpoint.id, organizationId: endpoint.organizationId, url: endpoint.url, secrets: targetSecrets(endpoint) };
    const { row, ok, result } = await attempt(target, event, { attempt: context.attempt, replayOf: null, nextRetryAt: retryAt });
    context.inSettleBatch(recordAttempts, row);
    if (ok) {
      // Billed once delivered, in the settle transaction (summed across its jobs): the event's own
      // transaction, on the request's path, takes no lock on the organization's counters for it.
      context.inSettleBatch(countDeliveries, {
        organizationId: endpoint.organizationId,
        connectionId: event.connectionId,
        meter: 'webhook_deliveries',
        quantity: 1,
      });
      if (endpoint.failing) {
        context.inSettle(async (trx) => {
          await store.recordSuccess(trx, endpoint.id);
          endpoint.failing = false;
        });
      }
      return;
    }
    const disabled = await countFailure(endpoint);
    const reason = result.kind === 'response' ? `receiver answered ${result.status}` : result.error;
    throw new JobError(reason, { retryable: !disabled && retryAt !== null, ...(retryAt && !disabled ? { retryAt } : {}) });
  }

  return {
    /**
     * The event stream's subscriber: one delivery job per endpoint that wants the event (enabled,
     * subscribed to its type, of its connection if it names one), in the transaction that emitted it.
     * `ping` goes only where the test operation sends it, never to every endpoint subscribed to it.
     */
    async queueDeliveries(trx: Trx, event: EventEnvelope): Promise<void> {
      if (event.type === 'ping') return;
      const payloads: { event_id: string; endpoint_id: string }[] = [];
      for (const endpoint of await store.listEnabled(trx, event.organization_id)) {
        const types = JSON.parse(endpoint.events) as string[];
        if (!types.includes(event.type) && !types.includes(ALL_EVENT_TYPES)) continue;
        if (endpoint.connection_id !== null && endpoint.connection_id !== event.connection_id) continue;
        payloads.push({ event_id: event.id, endpoint_id: endpoint.id });
      }
      if (payloads.length === 0) return;
      // One insert for the whole fan-out.
      await queue.enqueueAll(trx, webhookDelivery, payloads);
      // The deliveries of this process find their event here instead of reading it back. Kept before
      // the commit, and safe so: only a delivery job asks for an event, by the id its payload names,
      // and the job commits with the event or not at all. The bytes are taken now, a snapshot of the
      // envelope the emitter also hands to its other subscribers and to its caller.
      queuedEnvelopes.keep(toSendable(event), payloads.length);
    },

    async create(actor: Actor, input: CreateWebhookEndpointInput): Promise<WebhookEndpoint & { secret: string }> {
      const { principal } = actor;
      // A connection key's endpoint is bound to its connection: it must not hear other numbers' events.
      const connectionId = input.connection_id ?? principal.connectionId ?? null;
      if (principal.connectionId && connectionId !== principal.connectionId)
        throw new AppError('resource_not_found', `No such connection: ${connectionId}.`, { param: '/connection_id' });
      assertEventTypes(input.events);
      await transport.checkUrl(input.url, '/url');
      return db.transaction().execute(async (trx) => {
        if (connectionId) await connections.getForReference(trx, principal, connectionId, '/connection_id');
        const now = clock.now().toISOString();
        const secret = newSecret();
        const row: WebhookEndpointsTable = {
          id: newId('webhookEndpoint', clock.now().getTime()),
          organization_id: principal.organizationId,
          connection_id: connectionId,
          url: input.url,
          events: JSON.stringify(input.events),
          description: input.description ?? null,
          status: 'enabled',
          disabled_reason: null,
          secret: secrets.seal(secret),
          previous_secret: null,
          previous_secret_expires_at: null,
          consecutive_failures: 0,
          first_failure_at: null,
          metadata: JSON.stringify(input.metadata ?? {}),
          created_at: now,
          updated_at: now,
        };
        await store.insert(trx, row);
        await audit.record(trx, actor, {
          action: 'webhook_endpoint.created',
          target: { type: 'webhook_endpoint', id: row.id },
          data: { url: row.url, events: input.events },
        });
        return { ...toEndpoint(row), secret };
      });
    },

    async get(principal: Principal, id: string): Promise<WebhookEndpoint> {
      return toEndpoint(await getRow(db, principal, id));
    },

    async list(principal: Principal, page: PageRequest): Promise<Page<WebhookEndpoint>> {
      return mapPage(await store.list(db, scopeOf(principal), page), toEndpoint);
    },

    async update(actor: Actor, id: string, input: UpdateWebhookEndpointInput): Promise<WebhookEndpoint> {
      if (input.events !== undefined) assertEventTypes(input.events);
      if (input.url !== undefined) await transport.checkUrl(input.url, '/url');
      return forgetAfter(
        id,
        db.transaction().execute(async (trx) => {
          const row = await getRow(trx, actor.principal, id);
          const now = clock.now().toISOString();
          const enabling = input.status === 'enabled' && row.status !== 'enabled';
          const changes: Partial<WebhookEndpointsTable> = {
            ...(input.url !== undefined ? { url: input.url } : {}),
            ...(input.events !== undefined ? { events: JSON.stringify(input.events) } : {}),
            ...(input.description !== undefined ? { description: input.description } : {}),
            ...(input.metadata !== undefined ? { metadata: JSON.stringify(input.metadata) } : {}),
            ...(input.status === 'disabled' && row.status !== 'disabled' ? { status: 'disabled', disabled_reason: 'manual' } : {}),
            // Enabling again starts the failure count afresh: the owner says the receiver is fixed.
            ...(enabling ? { status: 'enabled', disabled_reason: null, consecutive_failures: 0, first_failure_at: null } : {}),
            updated_at: now,
          };
          await store.update(trx, id, changes);
          const updated = { ...row, ...changes };
          await audit.record(trx, actor, {
            action: 'webhook_endpoint.updated',
            target: { type: 'webhook_endpoint', id },
            data: { fields: Object.keys(input) },
          });
          return toEndpoint(updated);
        }),
      );
    },

    async delete(actor: Actor, id: string): Promise<{ id: string; object: 'webhook_endpoint'; deleted: true }> {
      return forgetAfter(
        id,
        db.transaction().execute(async (trx) => {
          const row = await getRow(trx, actor.principal, id);
          // Waiting deliveries find the endpoint gone and stop; its attempt history goes with it.
          await store.delete(trx, id);
          await audit.record(trx, actor, { action: 'webhook_endpoint.deleted', target: { type: 'webhook_endpoint', id }, data: { url: row.url } });
          return { id, object: 'webhook_endpoint' as const, deleted: true as const };
        }),
      );
    },

    async rotateSecret(actor: Actor, id: string) {
      return forgetAfter(
        id,
        db.transaction().execute(async (trx) => {
          const row = await getRow(trx, actor.principal, id);
          const secret = newSecret();
          const expires = new Date(clock.now().getTime() + SECRET_ROTATION_OVERLAP_MS).toISOString();
          // Only two secrets are ever valid: a second rotation within the overlap retires the oldest.
          await store.update(trx, id, {
            secret: secrets.seal(secret),
            previous_secret: row.secret,
            previous_secret_expires_at: expires,
            updated_at: clock.now().toISOString(),
          });
          await audit.record(trx, actor, { action: 'webhook_endpoint.secret_rotated', target: { type: 'webhook_endpoint', id } });
          return { object: 'webhook_endpoint_secret' as const, endpoint_id: id, secret, previous_secret_expires_at: expires };
        }),
      );
    },

    /** Sends a `ping` now and reports what the receiver said; it does not count towards auto-disable. */
    async test(principal: Principal, id: string) {
      const row = await getRow(db, principal, id);
      const ping = await db
        .transaction()
        .execute((trx) => events.emit(trx, { type: 'ping', organizationId: row.organization_id, connectionId: row.connection_id, object: toEndpoint(row) }));
      const { row: attempted, ok, result } = await attempt(rowTarget(row), toSendable(ping), { attempt: 1, replayOf: null, nextRetryAt: null });
      await store.insertDelivery(db, attempted);
      const delivery = toDelivery(attempted);
      return {
        object: 'webhook_test' as const,
        success: ok,
        status_code: delivery.response_status,
        duration_ms: Math.round(result.durationMs),
        response_excerpt: delivery.response_excerpt,
        error: delivery.error,
        delivery,
      };
    },

    async listDeliveries(
      principal: Principal,
      endpointId: string,
      filters: { status?: string | undefined },
      page: PageRequest,
    ): Promise<Page<WebhookDelivery>> {
      await getRow(db, principal, endpointId);
      return mapPage(await store.listDeliveries(db, endpointId, filters, page), toDelivery);
    },

    /** Sends one attempt's event again, now, as a new attempt (whatever the endpoint's state). */
    async replay(principal: Principal, deliveryId: string): Promise<WebhookDelivery> {
      const original = await store.findDelivery(db, principal.organizationId, deliveryId);
      if (!original) throw notFound('webhook delivery');
      const endpoint = await store.find(db, scopeOf(principal), original.endpoint_id);
      const event = endpoint ? await events.find(db, endpoint.organization_id, original.event_id) : undefined;
      if (!endpoint || !event) throw notFound('webhook delivery');
      const { row } = await attempt(rowTarget(endpoint), toSendable(event), { attempt: 1, replayOf: original.id, nextRetryAt: null });
      await store.insertDelivery(db, row);
      return toDelivery(row);
    },

    /**
     * Deletes attempts older than `DELIVERY_RETENTION_MS` (the `webhook_delivery.purge` job, hourly).
     * An attempt whose retry is still ahead stays, however old: its delivery is not over.
     */
    purgeOldDeliveries(options: PurgeOptions = {}): Promise<PurgeResult> {
      const now = clock.now();
      const before = new Date(now.getTime() - DELIVERY_RETENTION_MS).toISOString();
      return purgeInBatches((limit) => store.deleteDeliveriesBefore(db, before, now.toISOString(), limit), options);
    },

    /**
     * The delivery job (`deliverOnce`). Each attempt here counts towards the deliveries its event
     * was kept for, when this process queued it.
     */
    async deliver(payload: DeliveryPayload, context: DeliveryContext): Promise<void> {
      try {
        await deliverOnce(payload, context);
      } finally {
        // Whatever came of it: a retry comes much later, and reads its event back.
        queuedEnvelopes.delivered(payload.event_id);
      }
    },
  };
}

type DeliveryPayload = { event_id: string; endpoint_id: string };
type DeliveryContext = Pick<JobContext, 'attempt' | 'maxAttempts' | 'previousAttemptLost' | 'inSettle' | 'inSettleBatch'>;

export type WebhookEndpointsService = ReturnType<typeof createWebhookEndpointsService>;
