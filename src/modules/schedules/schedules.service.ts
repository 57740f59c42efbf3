import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ScheduleOccurrencesTable, SchedulesTable } from '../../db/schema.ts';
import { scheduleFire, scheduleFireKey } from '../../jobs/catalog.ts';
import { JobError, type JobPayload } from '../../jobs/job.ts';
import type { Queue } from '../../jobs/queue.ts';
import { SECOND, type Clock } from '../../lib/clock.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { mergeMetadata } from '../../lib/metadata.ts';
import { StoredJson } from '../../lib/stored-json.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import { connectionScopeOf, type Actor, type Principal } from '../credentials/principal.ts';
import type { NotificationTargetResult, NotificationTargets } from '../notifications/notification-target.ts';
import type { RunTargets } from '../runs/run-target.ts';
import {
  checkRecurrence,
  describeRecurrence,
  gapNote,
  lastSlotBefore,
  localIso,
  resolveTimeZone,
  slotAfter,
  slotsAfter,
  slotsThrough,
  type Timing,
} from './recurrence.ts';
import {
  CATCHUP_WINDOW_DEFAULT_SECONDS,
  CATCHUP_WINDOW_MAX_SECONDS,
  MIN_SPACING_SECONDS,
  PREVIEW_DEFAULT_COUNT,
  type CreateScheduleInput,
  type PreviewScheduleInput,
  type SchedulePreview,
  type OccurrenceStatus,
  type OverlapPolicy,
  type Schedule,
  type ScheduleOccurrence,
  type ScheduleRecurrence,
  type ScheduleStatus,
  type ScheduleTarget,
  type UpdateScheduleInput,
} from './schedules.schemas.ts';
import type { ScheduleChanges, SchedulesStore } from './schedules.store.ts';

/** Active schedules an organization may have at once, on every plan. */
export const MAX_ACTIVE_SCHEDULES = 500;
/** Failed occurrences in a row after which the service pauses the schedule. */
export const FAILURES_BEFORE_PAUSE = 5;
/** The most slots one fire looks at within the catch-up window: the widest window at the closest spacing. */
const MAX_DUE_SLOTS = CATCHUP_WINDOW_MAX_SECONDS / MIN_SPACING_SECONDS + 1;

export type FirePayload = JobPayload<typeof scheduleFire>;

function toSchedule(row: SchedulesTable): Schedule {
  const recurrence = JSON.parse(row.recurrence) as ScheduleRecurrence;
  return {
    id: row.id,
    object: 'schedule',
    name: row.name,
    status: row.status as ScheduleStatus,
    paused_reason: row.paused_reason,
    timezone: row.timezone,
    recurrence,
    start_at: row.start_at,
    end_at: row.end_at,
    max_occurrences: row.max_occurrences,
    overlap_policy: row.overlap_policy as OverlapPolicy,
    catchup_window_seconds: row.catchup_window_seconds,
    target: new StoredJson<ScheduleTarget>(row.target),
    next_occurrence_at: row.next_occurrence_at,
    last_occurrence_at: row.last_occurrence_at,
    occurrence_count: row.occurrence_count,
    consecutive_failures: row.consecutive_failures,
    description: describeRecurrence(recurrence, row.timezone),
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    revision: row.revision,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function toOccurrence(row: ScheduleOccurrencesTable): ScheduleOccurrence {
  return {
    id: row.id,
    object: 'schedule_occurrence',
    schedule_id: row.schedule_id,
    scheduled_for: row.scheduled_for,
    scheduled_for_local: row.scheduled_for_local,
    status: row.status as OccurrenceStatus,
    reason: row.reason,
    fired_at: row.fired_at,
    result: row.result === null ? null : (JSON.parse(row.result) as ScheduleOccurrence['result']),
    error: row.error === null ? null : (JSON.parse(row.error) as ScheduleOccurrence['error']),
    created_at: row.created_at,
  };
}

/** What a request says about when a new schedule's occurrences come due (a create, or a preview). */
type TimingInput = Pick<CreateScheduleInput, 'timezone' | 'recurrence' | 'start_at' | 'end_at'>;

/** The fields that decide when occurrences come due. */
interface TimingFields {
  timezone: string;
  recurrence: string;
  start_at: string;
  end_at: string | null;
}

function timingOf(row: TimingFields): Timing {
  return {
    recurrence: JSON.parse(row.recurrence) as ScheduleRecurrence,
    timeZone: row.timezone,
    startAt: new Date(row.start_at),
    endAt: row.end_at === null ? null : new Date(row.end_at),
  };
}

/** The fields that decide whether another occurrence may come due. */
type Remaining = Pick<SchedulesTable, 'max_occurrences' | 'occurrence_count' | 'last_occurrence_at'>;

/**
 * The schedule's next slot from `now`: the first at or after it, and always after the latest
 * occurrence recorded (a slot recorded once is never queued again); none once `max_occurrences`
 * fired or failed.
 */
function nextFromNow(timing: Timing, row: Remaining, now: Date): Date | null {
  if (row.max_occurrences !== null && row.occurrence_count >= row.max_occurrences) return null;
  const last = row.last_occurrence_at === null ? null : new Date(row.last_occurrence_at);
  return last && last.getTime() >= now.getTime() ? slotAfter(timing, last) : slotAfter(timing, now, true);
}

function timeZoneOf(name: string): string {
  const resolved = resolveTimeZone(name);
  if (resolved === undefined) {
    throw invalidParam('/timezone', 'is not an IANA time zone the service knows (such as `Europe/Berlin`, `America/Sao_Paulo` or `UTC`)');
  }
  return resolved;
}

/** Thrown out of the fire transaction to undo whatever the refused target wrote, then recorded in another. */
class TargetRefused extends Error {
  readonly error: AppError;
  constructor(error: AppError) {
    super(error.message);
    this.error = error;
  }
}

/** An occurrence to record as a fire decides it. */
interface Decided {
  slot: Date;
  status: Exclude<OccurrenceStatus, 'pending' | 'canceled'>;
  reason: string | null;
}

export interface SchedulesServiceDeps {
  db: Db;
  store: SchedulesStore;
  clock: Clock;
  queue: Pick<Queue, 'enqueue' | 'cancel'>;
  audit: Pick<AuditEventsService, 'record'>;
  targets: NotificationTargets;
  runs: RunTargets;
}

export function createSchedulesService(deps: SchedulesServiceDeps) {
  const { db, store, clock, queue, audit, targets, runs } = deps;

  /** Checks a target with the module that creates what it names; answers it as stored and the connection the schedule belongs to. */
  async function checkTarget(principal: Principal, target: ScheduleTarget): Promise<{ stored: ScheduleTarget; connectionId: string | null }> {
    if (target.type === 'automation') {
      const checked = await runs.checkTarget(principal, target, '/target');
      return { stored: checked.target, connectionId: checked.connectionId };
    }
    const checked = await targets.checkTarget(principal, target, '/target');
    return { stored: checked, connectionId: checked.connection_id ?? null };
  }

  async function getRow(executor: Db, principal: Principal, id: string): Promise<SchedulesTable> {
    const row = await store.find(executor, connectionScopeOf(principal), id);
    if (!row) throw notFound('schedule');
    return row;
  }

  async function lockRow(trx: Trx, principal: Principal, id: string): Promise<SchedulesTable> {
    const row = await store.lock(trx, connectionScopeOf(principal), id);
    if (!row) throw notFound('schedule');
    return row;
  }

  async function assertBelowLimit(trx: Trx, organizationId: string): Promise<void> {
    // Counted in the writing transaction. Two creates racing at 499 on PostgreSQL may both pass: the
    // limit guards against runaway scripts, it is no quota that must hold to the unit.
    if ((await store.countActive(trx, organizationId)) >= MAX_ACTIVE_SCHEDULES) {
      throw new AppError(
        'resource_limit_reached',
        `The organization has ${MAX_ACTIVE_SCHEDULES} active schedules, the most it may have: pause or delete one it no longer needs first.`,
      );
    }
  }

  /** Queues the one fire job of the schedule as it now is (its next slot, its revision). */
  async function queueFire(trx: Trx, row: Pick<SchedulesTable, 'id' | 'next_occurrence_at' | 'revision'>): Promise<void> {
    if (row.next_occurrence_at === null) return;
    await queue.enqueue(
      trx,
      scheduleFire,
      { schedule_id: row.id, scheduled_for: row.next_occurrence_at, revision: row.revision },
      { runAt: new Date(row.next_occurrence_at), dedupeKey: scheduleFireKey(row.id, row.next_occurrence_at, row.revision) },
    );
  }

  /** Removes the schedule's queued fire job; one already running sees the change when it reads the schedule. */
  async function cancelFire(trx: Trx, row: Pick<SchedulesTable, 'id' | 'next_occurrence_at' | 'revision'>): Promise<void> {
    if (row.next_occurrence_at !== null) await queue.cancel(trx, scheduleFireKey(row.id, row.next_occurrence_at, row.revision));
  }

  /** `end_at` after `start_at`; the param is the field the request sent. */
  function checkBounds(startAt: string, endAt: string | null, param: '/start_at' | '/end_at'): void {
    if (endAt !== null && Date.parse(endAt) <= Date.parse(startAt))
      throw invalidParam(param, param === '/end_at' ? 'must be after start_at' : 'must be before end_at');
  }

  function noOccurrence(recurrence: ScheduleRecurrence): AppError {
    return recurrence.type === 'once'
      ? invalidParam('/recurrence/at', 'must fall between start_at and end_at')
      : invalidParam('/end_at', 'leaves no occurrence: the recurrence has none from now (and start_at) until end_at');
  }

  /**
   * A new schedule's timing from the request, checked as creating it checks it (the same refusals,
   * on the same fields): what `create` stores and what `preview` shows.
   */
  function plan(input: TimingInput, now: Date) {
    const timezone = timeZoneOf(input.timezone ?? 'UTC');
    const startAt = input.start_at === undefined ? now.toISOString() : new Date(input.start_at).toISOString();
    const endAt = input.end_at === undefined ? null : new Date(input.end_at).toISOString();
    checkBounds(startAt, endAt, '/end_at');
    const recurrence = input.recurrence.type === 'once' ? { ...input.recurrence, at: new Date(input.recurrence.at).toISOString() } : input.recurrence;
    checkRecurrence(recurrence, timezone, now, new Date(Math.max(now.getTime(), Date.parse(startAt))));
    const timing = timingOf({ timezone, recurrence: JSON.stringify(recurrence), start_at: startAt, end_at: endAt });
    const first = slotAfter(timing, now, true);
    if (!first) throw noOccurrence(recurrence);
    return { timezone, startAt, endAt, recurrence, timing, first };
  }

  function upcoming(row: SchedulesTable, count: number): ScheduleOccurrence[] {
    if (row.status !== 'active' || row.next_occurrence_at === null) return [];
    const remaining = row.max_occurrences === null ? count : Math.min(count, row.max_occurrences - row.occurrence_count);
    const timing = timingOf(row);
    return slotsAfter(timing, new Date(row.next_occurrence_at), remaining, true).map((slot) => ({
      id: null,
      object: 'schedule_occurrence' as const,
      schedule_id: row.id,
      scheduled_for: slot.toISOString(),
      scheduled_for_local: localIso(slot, row.timezone),
      status: 'pending' as const,
      reason: gapNote(timing, slot),
      fired_at: null,
      result: null,
      error: null,
      created_at: null,
    }));
  }

  /**
   * Fires the payload's slot, in the caller's transaction: nothing happens unless the schedule is
   * active, of the payload's revision, and still waiting for this slot (so a job that runs again
   * after its transaction committed finds the schedule moved on, and does nothing twice). With
   * `refusal`, the target refused this fire in an earlier transaction, which was undone: the
   * occurrence is recorded `failed` with it instead of asking the target again.
   */
  async function fireIn(trx: Trx, payload: FirePayload, refusal: AppError | undefined): Promise<void> {
    const row = await store.lockById(trx, payload.schedule_id);
    if (!row || row.status !== 'active' || row.revision !== payload.revision || row.next_occurrence_at !== payload.scheduled_for) return;
    const now = clock.now();
    const timing = timingOf(row);
    const slot = new Date(payload.scheduled_for);
    // A job runs at its slot or later; a worker whose clock is behind the one that queued it waits.
    if (slot.getTime() > now.getTime()) throw new JobError(`schedule ${row.id}: ${payload.scheduled_for} is not due yet`, { retryable: true, retryAt: slot });
    const window = row.catchup_window_seconds * SECOND;
    const decided: Decided[] = [];

    // Slots more than the catch-up window old are missed; only the latest is recorded, and the
    // schedule goes on from there, so an outage ends with one record and no storm of sends.
    let first: Date | null = slot;
    const cutoff = new Date(now.getTime() - window);
    if (slot.getTime() < cutoff.getTime()) {
      const candidate = lastSlotBefore(timing, cutoff);
      const latestMissed = candidate && candidate.getTime() > slot.getTime() ? candidate : slot;
      const many = latestMissed.getTime() > slot.getTime();
      decided.push({
        slot: latestMissed,
        status: 'missed',
        reason: [
          gapNote(timing, latestMissed),
          `${many ? `Occurrences from ${slot.toISOString()} to this one` : 'It'} came due more than catchup_window_seconds (${row.catchup_window_seconds} s) before the schedule could fire, at ${now.toISOString()}${many ? ': only this one, the latest, is recorded' : ''}`,
        ]
          .filter(Boolean)
          .join('. '),
      });
      first = slotAfter(timing, latestMissed);
    }

    // The slots due now, within the window: one when the schedule is on time, several when it fell behind.
    const due = first ? slotsThrough(timing, first, now, MAX_DUE_SLOTS) : [];
    let firing: Date | null = null;
    if (due.length > 0) {
      if (row.overlap_policy === 'allow') {
        // Each in turn: the next slot is due already, so its job runs at once.
        firing = due[0]!;
      } else {
        firing = due[due.length - 1]!;
        if (due.length > 1) {
          const skipped = due.slice(0, -1);
          const latest = skipped[skipped.length - 1]!;
          decided.push({
            slot: latest,
            status: 'skipped',
            reason: [
              gapNote(timing, latest),
              `Due at once with later occurrences when the schedule fired late, at ${now.toISOString()}; with overlap_policy skip only the latest, ${firing.toISOString()}, fired${skipped.length > 1 ? `. ${skipped.length} occurrences from ${skipped[0]!.toISOString()} were skipped: only this one, the latest, is recorded` : ''}`,
            ]
              .filter(Boolean)
              .join('. '),
          });
        }
      }
    }

    const changes: ScheduleChanges = { updated_at: now.toISOString() };
    let count = row.occurrence_count;
    let failures = row.consecutive_failures;
    let lastFailure: AppError | undefined;
    for (const each of decided) await record(trx, row, each, now);
    if (firing) {
      // Already recorded (a slot is recorded once, whatever runs it): nothing is created twice.
      const recorded = await store.findOccurrence(trx, row.id, firing.toISOString());
      if (!recorded) {
        const occurrenceId = newId('scheduleOccurrence', now.getTime());
        let result: NotificationTargetResult | { run_id: string } | null = null;
        if (refusal) {
          failures++;
          lastFailure = refusal;
        } else {
          try {
            const target = JSON.parse(row.target) as ScheduleTarget;
            const occurrence = { organizationId: row.organization_id, scheduleId: row.id, occurrenceId };
            result =
              target.type === 'automation'
                ? await runs.createForOccurrence(trx, { ...occurrence, target })
                : await targets.createForOccurrence(trx, { ...occurrence, target, sendAt: now });
          } catch (error) {
            if (error instanceof AppError) throw new TargetRefused(error);
            throw error;
          }
          failures = 0;
        }
        count++;
        await store.insertOccurrence(trx, {
          id: occurrenceId,
          organization_id: row.organization_id,
          schedule_id: row.id,
          scheduled_for: firing.toISOString(),
          scheduled_for_local: localIso(firing, row.timezone),
          status: refusal ? 'failed' : 'fired',
          reason: gapNote(timing, firing),
          fired_at: now.toISOString(),
          result: result === null ? null : JSON.stringify(result),
          error: refusal ? JSON.stringify({ code: refusal.code, message: refusal.message }) : null,
          created_at: now.toISOString(),
        });
      }
    }

    const lastRecorded = [...decided.map((each) => each.slot), ...(firing ? [firing] : [])].reduce((a, b) => (a > b ? a : b));
    changes.last_occurrence_at = lastRecorded.toISOString();
    changes.occurrence_count = count;
    changes.consecutive_failures = failures;
    // No drift: the next slot follows the one that fired (or the last recorded), not the time it ran.
    const limitReached = row.max_occurrences !== null && count >= row.max_occurrences;
    const next = limitReached ? null : firing ? slotAfter(timing, firing) : first;
    if (failures >= FAILURES_BEFORE_PAUSE && lastFailure) {
      changes.status = 'paused';
      changes.paused_reason = `${FAILURES_BEFORE_PAUSE} occurrences in a row failed; the last: ${lastFailure.code}: ${lastFailure.message}`;
      changes.next_occurrence_at = null;
      await audit.record(
        trx,
        { system: true, organizationId: row.organization_id },
        {
          action: 'schedule.paused',
          target: { type: 'schedule', id: row.id },
          data: { reason: changes.paused_reason, consecutive_failures: failures },
        },
      );
    } else {
      changes.next_occurrence_at = next ? next.toISOString() : null;
      if (!next) changes.status = 'completed';
    }
    await store.update(trx, row.id, changes);
    await queueFire(trx, { id: row.id, next_occurrence_at: changes.next_occurrence_at, revision: row.revision });
  }

  async function record(trx: Trx, row: SchedulesTable, decided: Decided, now: Date): Promise<void> {
    await store.insertOccurrence(trx, {
      id: newId('scheduleOccurrence', now.getTime()),
      organization_id: row.organization_id,
      schedule_id: row.id,
      scheduled_for: decided.slot.toISOString(),
      scheduled_for_local: localIso(decided.slot, row.timezone),
      status: decided.status,
      reason: decided.reason,
      fired_at: null,
      result: null,
      error: null,
      created_at: now.toISOString(),
    });
  }

  return {
    async create(actor: Actor, input: CreateScheduleInput): Promise<Schedule> {
      const { principal } = actor;
      const now = clock.now();
      const { timezone, startAt, endAt, recurrence, first } = plan(input, now);
      // Outside the transaction: it reads through the service's own handle (see docs/architecture.md).
      const target = await checkTarget(principal, input.target);
      const status = input.status ?? 'active';

      return db.transaction().execute(async (trx) => {
        if (status === 'active') await assertBelowLimit(trx, principal.organizationId);
        const row: SchedulesTable = {
          id: newId('schedule', now.getTime()),
          organization_id: principal.organizationId,
          connection_id: target.connectionId,
          name: input.name ?? null,
          status,
          paused_reason: null,
          timezone,
          recurrence: JSON.stringify(recurrence),
          start_at: startAt,
          end_at: endAt,
          max_occurrences: input.max_occurrences ?? null,
          overlap_policy: input.overlap_policy ?? 'skip',
          catchup_window_seconds: input.catchup_window_seconds ?? CATCHUP_WINDOW_DEFAULT_SECONDS,
          target: JSON.stringify(target.stored),
          next_occurrence_at: status === 'active' ? first.toISOString() : null,
          last_occurrence_at: null,
          occurrence_count: 0,
          consecutive_failures: 0,
          metadata: JSON.stringify(input.metadata ?? {}),
          revision: 1,
          created_at: now.toISOString(),
          updated_at: now.toISOString(),
          deleted_at: null,
        };
        await store.insert(trx, row);
        await queueFire(trx, row);
        await audit.record(trx, actor, {
          action: 'schedule.created',
          target: { type: 'schedule', id: row.id },
          data: { status, recurrence, timezone },
        });
        return toSchedule(row);
      });
    },

    async get(principal: Principal, id: string): Promise<Schedule> {
      return toSchedule(await getRow(db, principal, id));
    },

    async list(principal: Principal, filters: { status?: ScheduleStatus | undefined }, page: PageRequest): Promise<Page<Schedule>> {
      return mapPage(await store.list(db, connectionScopeOf(principal), filters, page), toSchedule);
    },

    /**
     * Changes what was sent. Any change adds one to the revision and replaces the queued fire job by
     * the one of the schedule as it now is: `paused` queues none, `active` (a resume) clears the
     * failures and goes on from now. A schedule with no occurrence left becomes `completed`; a
     * request that changes nothing writes nothing.
     */
    async update(actor: Actor, id: string, input: UpdateScheduleInput): Promise<Schedule> {
      const now = clock.now();
      const timezone = input.timezone === undefined ? undefined : timeZoneOf(input.timezone);
      const checkedTarget = input.target ? await checkTarget(actor.principal, input.target) : undefined;

      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        const recurrence =
          input.recurrence === undefined
            ? (JSON.parse(row.recurrence) as ScheduleRecurrence)
            : input.recurrence.type === 'once'
              ? { ...input.recurrence, at: new Date(input.recurrence.at).toISOString() }
              : input.recurrence;
        const fields = {
          name: input.name === undefined ? row.name : input.name,
          timezone: timezone ?? row.timezone,
          recurrence: JSON.stringify(recurrence),
          start_at: input.start_at === undefined ? row.start_at : new Date(input.start_at).toISOString(),
          end_at: input.end_at === undefined ? row.end_at : input.end_at === null ? null : new Date(input.end_at).toISOString(),
          max_occurrences: input.max_occurrences === undefined ? row.max_occurrences : input.max_occurrences,
          overlap_policy: input.overlap_policy ?? row.overlap_policy,
          catchup_window_seconds: input.catchup_window_seconds ?? row.catchup_window_seconds,
          target: checkedTarget ? JSON.stringify(checkedTarget.stored) : row.target,
          connection_id: checkedTarget ? checkedTarget.connectionId : row.connection_id,
          metadata: mergeMetadata(row.metadata, input.metadata),
        } satisfies ScheduleChanges;
        checkBounds(fields.start_at, fields.end_at, input.end_at === undefined ? '/start_at' : '/end_at');
        if (input.recurrence !== undefined || (timezone !== undefined && recurrence.type === 'cron')) {
          checkRecurrence(recurrence, fields.timezone, now, new Date(Math.max(now.getTime(), Date.parse(fields.start_at))));
        }

        let status = row.status as ScheduleStatus;
        let resumed = false;
        if (input.status === 'paused' && status !== 'paused') {
          if (status === 'completed')
            throw new AppError('invalid_state', 'The schedule is completed: it has no occurrence left to pause.', { param: '/status' });
          status = 'paused';
        } else if (input.status === 'active' && status !== 'active') {
          resumed = true;
          status = 'active';
        }
        const changed = (Object.keys(fields) as (keyof typeof fields)[]).filter((field) => fields[field] !== row[field]);
        if (changed.length === 0 && status === row.status) return toSchedule(row);

        const next = status === 'active' ? nextFromNow(timingOf(fields), { ...row, max_occurrences: fields.max_occurrences }, now) : null;
        if (status === 'active' && !next) {
          // A completed schedule stays so unless the change leaves it an occurrence.
          if (row.status === 'completed') {
            throw new AppError(
              'invalid_state',
              'The schedule is completed and would have no occurrence left: extend end_at, raise max_occurrences or change the recurrence to resume it.',
              { param: '/status' },
            );
          }
          status = 'completed';
        }
        if (status === 'active' && row.status !== 'active') await assertBelowLimit(trx, row.organization_id);

        const changes = {
          ...fields,
          status,
          // A pause the service made keeps its reason through other edits; a request's pause has none.
          paused_reason: status === 'paused' && row.status === 'paused' ? row.paused_reason : null,
          consecutive_failures: resumed ? 0 : row.consecutive_failures,
          next_occurrence_at: next ? next.toISOString() : null,
          revision: row.revision + 1,
          updated_at: now.toISOString(),
        } satisfies ScheduleChanges;
        const after: SchedulesTable = { ...row, ...changes };
        await store.update(trx, id, changes);
        await cancelFire(trx, row);
        await queueFire(trx, after);
        const action = status === 'paused' && row.status !== 'paused' ? 'schedule.paused' : resumed ? 'schedule.resumed' : 'schedule.updated';
        await audit.record(trx, actor, {
          action,
          target: { type: 'schedule', id },
          data: { fields: [...changed.filter((field) => field !== 'connection_id'), ...(status !== row.status ? ['status'] : [])], revision: after.revision },
        });
        return toSchedule(after);
      });
    },

    /** Deletes softly: what its occurrences created keeps its `schedule_id`; every read answers 404. */
    async delete(actor: Actor, id: string): Promise<{ id: string; object: 'schedule'; deleted: true }> {
      return db.transaction().execute(async (trx) => {
        const row = await lockRow(trx, actor.principal, id);
        const now = clock.now().toISOString();
        await cancelFire(trx, row);
        await store.update(trx, id, { deleted_at: now, next_occurrence_at: null, updated_at: now });
        await audit.record(trx, actor, { action: 'schedule.deleted', target: { type: 'schedule', id }, data: { status: row.status } });
        return { id, object: 'schedule' as const, deleted: true as const };
      });
    },

    /**
     * What a schedule with this timing would do, without creating one: the recurrence in words and
     * its first occurrences from now, refused exactly as `create` would refuse it. The dashboard
     * shows it before saving, so the browser never re-implements the service's calendar rules.
     */
    preview(input: PreviewScheduleInput): SchedulePreview {
      const { timezone, recurrence, timing, first } = plan(input, clock.now());
      const count = Math.min(input.count ?? PREVIEW_DEFAULT_COUNT, input.max_occurrences ?? Number.MAX_SAFE_INTEGER);
      return {
        object: 'schedule_preview',
        timezone,
        description: describeRecurrence(recurrence, timezone),
        occurrences: slotsAfter(timing, first, count, true).map((slot) => ({
          scheduled_for: slot.toISOString(),
          scheduled_for_local: localIso(slot, timezone),
          reason: gapNote(timing, slot),
        })),
      };
    },

    /**
     * The schedule's occurrences, newest first by default. With `upcoming`, a page asked for without
     * a cursor also holds up to `limit` upcoming ones, computed (status `pending`, no id): first in
     * `desc` order, last in `asc`.
     */
    async listOccurrences(principal: Principal, id: string, options: { upcoming: boolean }, page: PageRequest): Promise<Page<ScheduleOccurrence>> {
      const row = await getRow(db, principal, id);
      const stored = mapPage(await store.listOccurrences(db, id, page), toOccurrence);
      if (!options.upcoming || page.after !== undefined || page.before !== undefined) return stored;
      const ahead = upcoming(row, page.limit);
      return { ...stored, data: page.order === 'asc' ? [...stored.data, ...ahead] : [...ahead.reverse(), ...stored.data] };
    },

    /**
     * The fire job: in one transaction, records the occurrence, has the target create what it sends
     * and queues the next slot, so a worker that dies anywhere in it leaves nothing and the job runs
     * again. A target that refuses (an AppError: the template paused, the connection gone) undoes
     * whatever it wrote with that transaction; the failure is then recorded in a second one.
     */
    async fire(payload: FirePayload): Promise<void> {
      try {
        await db.transaction().execute((trx) => fireIn(trx, payload, undefined));
      } catch (error) {
        if (!(error instanceof TargetRefused)) throw error;
        await db.transaction().execute((trx) => fireIn(trx, payload, error.error));
      }
    },
  };
}

export type SchedulesService = ReturnType<typeof createSchedulesService>;
