import type { Db, Trx } from '../../db/connect.ts';
import type { Page } from '../../db/pagination.ts';
import type { EventEnvelope } from '../../events/envelope.ts';
import type { EventSink } from '../../events/emit.ts';
import { DAY, HOUR, type Clock } from '../../lib/clock.ts';
import { AppError, invalidParam } from '../../lib/errors.ts';
import type { Log } from '../../lib/log.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { Principal } from '../credentials/principal.ts';
import type { TemplatesService } from '../templates/index.ts';
import { BILLED_METER, METER_NAMES, METERS, PLANS, periodOf, type MeterName, type PlanName } from './plans.ts';
import type { GroupBy, Usage, UsageBreakdownRow, UsageMeter, UsageThreshold } from './usage.schemas.ts';
import type { BreakdownColumn, UsageStore } from './usage.store.ts';

/** The meters counted as facts happen; `messages_sent` is their categories' sum, `unique_recipients_24h` a count of recent contacts. */
export type CountedMeter = Exclude<MeterName, 'messages_sent' | 'unique_recipients_24h'>;

export const MESSAGE_CATEGORIES = ['marketing', 'utility', 'authentication', 'service'] as const;
export type MessageCategory = (typeof MESSAGE_CATEGORIES)[number];

/** A billable fact, counted in the transaction that makes it. */
export interface UsageFact {
  organizationId: string;
  /** The number it went through; a test connection's facts are not counted. */
  connectionId: string | null;
  meter: CountedMeter;
  quantity: number;
  automationId?: string | undefined;
}

export const THRESHOLD_PERCENTS = [50, 80, 100] as const;

/** API request counts wait in memory at most about this long, on the service's clock, before they are written. */
export const REQUEST_FLUSH_MS = 1000;

/** How long recipients are remembered: the window `unique_recipients_24h` counts in. */
const RECIPIENT_WINDOW_MS = DAY;

/**
 * A recipient's time is moved forward at most once an hour: one write per pair and hour instead of
 * one per message. So a contact written to all day leaves the count up to an hour before 24 hours
 * have passed since the last message; never early for one written to only once.
 */
const RECIPIENT_REFRESH_MS = HOUR;

/** Connections' modes never change (a number is connected live or test), so they are remembered for good, a bounded number of them. */
const REMEMBERED_MODES = 10_000;

export interface UsageServiceDeps {
  db: Db;
  clock: Clock;
  store: UsageStore;
  log: Log;
  events: EventSink;
  connections: Pick<ConnectionsService, 'modeOf' | 'getForReference'>;
  templates: Pick<TemplatesService, 'categoryOf'>;
  plans: { planOf(db: Db, organizationId: string): Promise<PlanName> };
}

function periodBounds(period: string): { start: Date; end: Date } {
  const [year, month] = period.split('-').map(Number) as [number, number];
  return { start: new Date(Date.UTC(year, month - 1, 1)), end: new Date(Date.UTC(year, month, 1)) };
}

/** The number a messaging tier allows in 24 hours (`TIER_1K` → 1,000); null for unlimited or not set. */
export function tierLimit(tier: string | null | undefined): number | null {
  const match = /^TIER_(\d+)(K?)$/.exec(tier ?? '');
  if (!match) return null;
  return Number(match[1]) * (match[2] === 'K' ? 1000 : 1);
}

function percentOf(quantity: number, limit: number | null): number | null {
  return limit === null || limit === 0 ? null : Math.round((quantity / limit) * 1000) / 10;
}

/**
 * A breakdown's cursor is the last group's value, opaque (so that `''`, no number, is one too). Its
 * rows have no ids, so the list walks forward only (`after`); a month has at most 31 days, and as
 * many numbers or automations as the organization has.
 */
function encodeCursor(key: string): string {
  return `k${Buffer.from(key, 'utf8').toString('base64url')}`;
}

function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  if (!/^k[A-Za-z0-9_-]*$/.test(cursor)) throw invalidParam('/query/after', 'is not a cursor of this list');
  return Buffer.from(cursor.slice(1), 'base64url').toString('utf8');
}

/**
 * Usage: what an organization's live traffic used, counted in the transaction of each fact, against
 * its plan's limits (docs/usage.md). Counters are kept per UTC day, number and automation, and per
 * calendar month; crossing 50, 80 or 100 % of a limit emits `usage.threshold_reached` once per
 * meter, threshold and month, and a hard limit refuses sends.
 */
export function createUsageService(deps: UsageServiceDeps) {
  const { db, clock, store, log, events, connections, templates, plans } = deps;
  const testConnections = new Map<string, boolean>();
  /** API requests, counted in memory and written once a second (`flushRequests`). */
  let pendingRequests = new Map<string, { organizationId: string; connectionId: string | null; count: number }>();

  async function isTest(executor: Db, connectionId: string): Promise<boolean> {
    const known = testConnections.get(connectionId);
    if (known !== undefined) return known;
    const mode = await connections.modeOf(executor, connectionId);
    // An unknown connection is not a fact to count; not remembered, in case it is being created.
    if (!mode) return true;
    if (testConnections.size >= REMEMBERED_MODES) testConnections.delete(testConnections.keys().next().value!);
    testConnections.set(connectionId, mode.test);
    return mode.test;
  }

  async function crossThresholds(
    trx: Trx,
    p: {
      organizationId: string;
      meter: MeterName;
      connectionId: string | null;
      period: string;
      periodStart: Date;
      before: number;
      after: number;
      limit: number;
    },
  ): Promise<void> {
    for (const percent of THRESHOLD_PERCENTS) {
      const mark = (p.limit * percent) / 100;
      if (!(p.before < mark && p.after >= mark)) continue;
      const reachedAt = clock.now().toISOString();
      const recorded = await store.recordThreshold(trx, {
        organization_id: p.organizationId,
        period: p.period,
        meter: p.meter,
        connection_id: p.connectionId ?? '',
        threshold_percent: percent,
        quantity: p.after,
        limit: p.limit,
        reached_at: reachedAt,
      });
      if (!recorded) continue;
      const object: UsageThreshold = {
        object: 'usage_threshold',
        meter: p.meter,
        connection_id: p.connectionId,
        threshold_percent: percent,
        quantity: p.after,
        limit: p.limit,
        period_start: p.periodStart.toISOString(),
        reached_at: reachedAt,
      };
      await events.emit(trx, { type: 'usage.threshold_reached', organizationId: p.organizationId, connectionId: p.connectionId, object });
    }
  }

  /** Adds to a month's total and warns at the plan's thresholds. */
  async function addToPeriod(trx: Trx, fact: { organizationId: string; meter: MeterName; quantity: number }, now: Date): Promise<void> {
    const period = periodOf(now);
    const after = await store.addToPeriod(trx, { organizationId: fact.organizationId, period, meter: fact.meter, quantity: fact.quantity });
    const limit = PLANS[await plans.planOf(trx, fact.organizationId)].limits[fact.meter];
    if (!limit) return;
    await crossThresholds(trx, {
      organizationId: fact.organizationId,
      meter: fact.meter,
      connectionId: null,
      period,
      periodStart: periodBounds(period).start,
      before: after - fact.quantity,
      after,
      limit: limit.limit,
    });
  }

  async function count(trx: Trx, fact: UsageFact): Promise<void> {
    if (fact.quantity <= 0) return;
    if (fact.connectionId !== null && (await isTest(trx, fact.connectionId))) return;
    const now = clock.now();
    await store.addToCounter(trx, {
      organization_id: fact.organizationId,
      day: now.toISOString().slice(0, 10),
      meter: fact.meter,
      connection_id: fact.connectionId ?? '',
      automation_id: fact.automationId ?? '',
      quantity: fact.quantity,
    });
    await addToPeriod(trx, fact, now);
    if (fact.meter.startsWith('messages_sent.')) await addToPeriod(trx, { ...fact, meter: 'messages_sent' }, now);
  }

  /**
   * A contact sent a message through a number: new in the last 24 hours, it counts against the
   * number's tier. The marks are checked whenever the pair was written (new, or refreshed after an
   * hour): a refreshed pair did not move the count, and a mark it finds already reached that day is
   * recorded already, so checking again is only a read.
   */
  async function countRecipient(trx: Trx, organizationId: string, connectionId: string, contactId: string): Promise<void> {
    const now = clock.now();
    const refreshBefore = new Date(now.getTime() - RECIPIENT_REFRESH_MS).toISOString();
    // Written to within the hour: already counted, and the count has not moved.
    if (!(await store.touchRecipient(trx, { organizationId, connectionId, contactId, at: now.toISOString(), refreshBefore }))) return;
    const since = new Date(now.getTime() - RECIPIENT_WINDOW_MS).toISOString();
    const mode = await connections.modeOf(trx, connectionId);
    const limit = tierLimit(mode?.messagingLimitTier);
    if (limit === null) return;
    const after = await store.recipientsSince(trx, connectionId, since);
    const day = now.toISOString().slice(0, 10);
    await crossThresholds(trx, {
      organizationId,
      meter: 'unique_recipients_24h',
      connectionId,
      period: day,
      periodStart: new Date(`${day}T00:00:00.000Z`),
      before: after - 1,
      after,
      limit,
    });
  }

  async function onMessageSent(trx: Trx, event: EventEnvelope): Promise<void> {
    const message = event.data.object as { connection_id: string; contact_id: string; type: string; template?: { id?: string } };
    if (await isTest(trx, message.connection_id)) return;
    let category: MessageCategory = 'service';
    if (message.type === 'template') {
      // A template the provider has not categorised is billed as utility, the provider's default for transactional templates.
      category = (message.template?.id && (await templates.categoryOf(trx, message.template.id))) || 'utility';
    }
    await count(trx, { organizationId: event.organization_id, connectionId: message.connection_id, meter: `messages_sent.${category}`, quantity: 1 });
    await countRecipient(trx, event.organization_id, message.connection_id, message.contact_id);
  }

  function resolvePeriod(period: string | undefined): string {
    return period === undefined || period === 'current' ? periodOf(clock.now()) : period;
  }

  /** A connection key sees its own number only; any other credential the whole organization, or one of its numbers. */
  async function scopedConnection(principal: Principal, connectionId: string | undefined): Promise<string | undefined> {
    const id = connectionId ?? principal.connectionId ?? undefined;
    if (id === undefined) return undefined;
    await connections.getForReference(db, principal, id, '/query/connection_id');
    return id;
  }

  async function meterRows(principal: Principal, period: string, connectionId: string | undefined): Promise<UsageMeter[]> {
    const plan = PLANS[await plans.planOf(db, principal.organizationId)];
    const { start, end } = periodBounds(period);
    const since = new Date(clock.now().getTime() - RECIPIENT_WINDOW_MS).toISOString();
    let quantities: Map<string, number>;
    let recipients: number;
    let recipientLimit: number | null = null;
    if (connectionId === undefined) {
      quantities = await store.periodQuantities(db, principal.organizationId, period);
      recipients = await store.recipientsOfOrganizationSince(db, principal.organizationId, since);
    } else {
      quantities = await store.connectionQuantities(db, {
        organizationId: principal.organizationId,
        connectionId,
        from: start.toISOString().slice(0, 10),
        to: new Date(end.getTime() - DAY).toISOString().slice(0, 10),
      });
      const categories = MESSAGE_CATEGORIES.reduce((sum, category) => sum + (quantities.get(`messages_sent.${category}`) ?? 0), 0);
      quantities.set('messages_sent', categories);
      recipients = await store.recipientsSince(db, connectionId, since);
      recipientLimit = tierLimit((await connections.modeOf(db, connectionId))?.messagingLimitTier);
    }
    return METER_NAMES.map((meter) => {
      const quantity = meter === 'unique_recipients_24h' ? recipients : (quantities.get(meter) ?? 0);
      // A number's share of an organization-wide limit would mislead: limits are shown for the whole organization only.
      const limit = meter === 'unique_recipients_24h' ? recipientLimit : connectionId === undefined ? (plan.limits[meter]?.limit ?? null) : null;
      return { meter, quantity, unit: METERS[meter], limit, percent: percentOf(quantity, limit) };
    });
  }

  const GROUP_COLUMNS: Record<GroupBy, BreakdownColumn> = { day: 'day', connection: 'connection_id', category: 'meter', automation: 'automation_id' };

  function metersOf(meter: MeterName, groupBy: GroupBy): string[] {
    if (meter === 'unique_recipients_24h') throw invalidParam('/query/meter', 'is a count of the last 24 hours, not kept per day: read it from GET /v1/usage');
    if (groupBy === 'category' && meter !== 'messages_sent') throw invalidParam('/query/group_by', 'category applies to messages_sent only');
    if (groupBy === 'automation' && meter !== 'automation_runs') throw invalidParam('/query/group_by', 'automation applies to automation_runs only');
    return meter === 'messages_sent' ? MESSAGE_CATEGORIES.map((category) => `messages_sent.${category}`) : [meter];
  }

  function rowOf(meter: MeterName, groupBy: GroupBy, key: string, quantity: number): UsageBreakdownRow {
    const row: UsageBreakdownRow = { object: 'usage_breakdown_row', meter, unit: METERS[meter], quantity };
    if (groupBy === 'day') row.day = key;
    if (groupBy === 'connection') row.connection_id = key === '' ? null : key;
    if (groupBy === 'category') row.category = key.slice('messages_sent.'.length);
    if (groupBy === 'automation') row.automation_id = key === '' ? null : key;
    return row;
  }

  let lastFlushAt = clock.now().getTime();

  /** The write in progress; each waits for the one before it (see `flushRequests`). */
  let flushing: Promise<void> = Promise.resolve();

  /**
   * Writes every count taken before the call. Writes run one at a time, so when this resolves the
   * counts of a write the timer had already begun are committed too: a caller reading usage after it
   * reads them all.
   */
  function flushRequests(): Promise<void> {
    flushing = flushing.then(writeRequests);
    return flushing;
  }

  async function writeRequests(): Promise<void> {
    lastFlushAt = clock.now().getTime();
    if (pendingRequests.size === 0) return;
    const batch = pendingRequests;
    pendingRequests = new Map();
    try {
      await db.transaction().execute(async (trx) => {
        for (const entry of batch.values()) {
          await count(trx, { organizationId: entry.organizationId, connectionId: entry.connectionId, meter: 'api_requests', quantity: entry.count });
        }
      });
    } catch (error) {
      // Kept for the next round: the store may be back by then.
      for (const [key, entry] of batch) {
        const pending = pendingRequests.get(key);
        pendingRequests.set(key, pending ? { ...pending, count: pending.count + entry.count } : entry);
      }
      log.warn({ err: error, organizations: batch.size }, 'API request counts not written; retried with the next round');
    }
  }

  return {
    count,

    /**
     * Facts counted together: those of one organization, number, automation and meter add up to one
     * fact, so a batch of deliveries moves each counter once (and crosses a threshold once) rather
     * than once per delivery. What it warns about is what counting them one by one would warn about.
     */
    async countAll(trx: Trx, facts: readonly UsageFact[]): Promise<void> {
      const summed = new Map<string, UsageFact>();
      for (const fact of facts) {
        const key = `${fact.organizationId} ${fact.connectionId ?? ''} ${fact.automationId ?? ''} ${fact.meter}`;
        const seen = summed.get(key);
        summed.set(key, seen ? { ...seen, quantity: seen.quantity + fact.quantity } : fact);
      }
      for (const fact of summed.values()) await count(trx, fact);
    },

    /** Subscriber: the facts the event stream carries. */
    async onEvent(trx: Trx, event: EventEnvelope): Promise<void> {
      const object = event.data.object as { connection_id?: string | null; automation_id?: string; imported?: boolean; mode?: string };
      const fact = { organizationId: event.organization_id, connectionId: event.connection_id, quantity: 1 };
      switch (event.type) {
        case 'message.sent':
          return onMessageSent(trx, event);
        case 'message.received':
          if (object.imported) return;
          return count(trx, { ...fact, meter: 'messages_received' });
        case 'notification.sent':
          return count(trx, { ...fact, meter: 'notifications_sent' });
        case 'automation.run_started':
          if (object.mode === 'test') return;
          return count(trx, { ...fact, meter: 'automation_runs', automationId: object.automation_id });
        default:
          return;
      }
    },

    /** An authenticated API request answered (test keys excluded by the caller): written within a second. */
    countRequest(principal: Principal): void {
      const key = `${principal.organizationId}:${principal.connectionId ?? ''}`;
      const pending = pendingRequests.get(key);
      if (pending) pending.count += 1;
      else pendingRequests.set(key, { organizationId: principal.organizationId, connectionId: principal.connectionId, count: 1 });
    },

    flushRequests,

    /**
     * The timer's round: writes the counts once `REQUEST_FLUSH_MS` have passed on the service's clock
     * since the last write. Timed by the injected clock, so that a test whose clock stands still sees
     * no write it did not ask for (tests that count the queries a request makes).
     */
    async flushDueRequests(): Promise<void> {
      if (clock.now().getTime() - lastFlushAt >= REQUEST_FLUSH_MS) await flushRequests();
    },

    /** Refuses a live send past a hard limit of the organization's plan. */
    async assertMaySend(executor: Db, send: { organizationId: string; test: boolean }): Promise<void> {
      if (send.test) return;
      const planName = await plans.planOf(executor, send.organizationId);
      const limit = PLANS[planName].limits.messages_sent;
      if (!limit?.hard) return;
      const period = periodOf(clock.now());
      const sent = await store.periodQuantity(executor, send.organizationId, period, 'messages_sent');
      if (sent < limit.limit) return;
      throw new AppError(
        'plan_limit_reached',
        `The ${planName} plan sends at most ${limit.limit} messages a month, and ${sent} were sent in ${period}. Upgrade the plan to send more this month.`,
        { extra: { meter: 'messages_sent', plan: planName, limit: limit.limit } },
      );
    },

    /** The billed meter's total for a month, for the metered price. */
    async billableQuantity(executor: Db, organizationId: string, period: string): Promise<number> {
      return store.periodQuantity(executor, organizationId, period, BILLED_METER);
    },

    async get(principal: Principal, query: { period?: string | undefined; connection_id?: string | undefined }): Promise<Usage> {
      const period = resolvePeriod(query.period);
      const connectionId = await scopedConnection(principal, query.connection_id);
      const { start, end } = periodBounds(period);
      return {
        object: 'usage',
        plan: await plans.planOf(db, principal.organizationId),
        connection_id: connectionId ?? null,
        period_start: start.toISOString(),
        period_end: end.toISOString(),
        meters: await meterRows(principal, period, connectionId),
      };
    },

    async breakdown(
      principal: Principal,
      query: {
        meter: MeterName;
        group_by?: GroupBy | undefined;
        period?: string | undefined;
        connection_id?: string | undefined;
        limit?: number | undefined;
        after?: string | undefined;
      },
    ): Promise<Page<UsageBreakdownRow>> {
      const groupBy = query.group_by ?? 'day';
      const meters = metersOf(query.meter, groupBy);
      const connectionId = await scopedConnection(principal, query.connection_id);
      const { start, end } = periodBounds(resolvePeriod(query.period));
      const limit = query.limit ?? 25;
      const rows = await store.breakdown(db, {
        organizationId: principal.organizationId,
        meters,
        column: GROUP_COLUMNS[groupBy],
        from: start.toISOString().slice(0, 10),
        to: new Date(end.getTime() - DAY).toISOString().slice(0, 10),
        connectionId,
        after: decodeCursor(query.after),
        limit: limit + 1,
      });
      const hasMore = rows.length > limit;
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return {
        object: 'list',
        data: page.map((row) => rowOf(query.meter, groupBy, row.key, row.quantity)),
        has_more: hasMore,
        next_cursor: hasMore && last ? encodeCursor(last.key) : null,
      };
    },

    /** The `usage_recipient.purge` job: contacts last written to before the 24-hour window no longer count. */
    async purgeRecipients(): Promise<number> {
      return store.forgetRecipientsBefore(db, new Date(clock.now().getTime() - RECIPIENT_WINDOW_MS).toISOString());
    },
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
