/**
 * When a schedule's occurrences come due, as pure functions of its recurrence, time zone and bounds:
 * the next slots, the last one before a time, the note an occurrence moved out of a DST gap carries,
 * local times and the recurrence in words. No store, no clock: every function is given its times.
 *
 * `croner` evaluates cron expressions (as an evaluator only: no job of it is ever scheduled, so it
 * starts no timer) and the runtime's time-zone data (Intl) gives offsets; nothing here does calendar
 * or time-zone arithmetic of its own. Cron expressions whose minute and hour hold no wildcard or step
 * (`30 2 * * *`, `0 9,17 * * 1-5`) are fixed local times: one that falls in a spring-forward gap runs
 * at the first valid time after it, and one that occurs twice in a fall-back overlap runs once, at its
 * first occurrence. The others (`*\/15 * * * *`) follow real time: a gap has none of their times, an
 * overlap has its times twice (croner's `fixedTimeRule: 'no-wildcard'`, as Vixie cron does).
 */
import { Cron } from 'croner';
import cronstrue from 'cronstrue';
import { MINUTE, SECOND } from '../../lib/clock.ts';
import { invalidParam } from '../../lib/errors.ts';
import { MIN_SPACING_SECONDS, type ScheduleRecurrence } from './schedules.schemas.ts';

export interface Timing {
  recurrence: ScheduleRecurrence;
  timeZone: string;
  /** No slot before it; an interval's slots count from it. */
  startAt: Date;
  /** No slot at or after it. */
  endAt: Date | null;
}

/** How many upcoming firings of a cron expression are checked for the minimum spacing. */
export const SPACING_CHECKED_FIRINGS = 50;

// Letters, digits, `_`, `+`, `-` and slashes: IANA names. It keeps out what Intl also accepts but is
// no zone (`+01:00`), whose meaning would not follow the zone's rules.
const IANA_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/**
 * The zone's name if the runtime's time-zone data knows it, in its canonical letter case
 * (`europe/berlin` is `Europe/Berlin`); an alias keeps its own name (`Asia/Calcutta` stays so).
 */
export function resolveTimeZone(name: string): string | undefined {
  if (!IANA_NAME.test(name)) return undefined;
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    return resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
  } catch {
    return undefined;
  }
}

// Parsed expressions, kept: a fire or a page of upcoming occurrences asks one expression many times.
const crons = new Map<string, Cron>();
const MAX_CRONS = 1000;

function cronOf(expression: string, timeZone: string): Cron {
  const key = `${timeZone} ${expression}`;
  let cron = crons.get(key);
  if (!cron) {
    // `paused` and no function: an evaluator, never a timer. Asked with an explicit reference time,
    // it keeps no state between calls, so one instance serves every schedule with this expression.
    cron = new Cron(expression, { timezone: timeZone, mode: '5-part', fixedTimeRule: 'no-wildcard', paused: true });
    if (crons.size >= MAX_CRONS) crons.delete(crons.keys().next().value!);
    crons.set(key, cron);
  }
  return cron;
}

/**
 * Checks what the schema cannot: a cron expression croner accepts with exactly five fields, whose
 * next firings are at least five minutes apart, and a `once` that is not in the past. `from` is when
 * the checked firings start (now, or the start if later).
 */
export function checkRecurrence(recurrence: ScheduleRecurrence, timeZone: string, now: Date, from: Date): void {
  if (recurrence.type === 'once') {
    if (new Date(recurrence.at).getTime() < now.getTime()) throw invalidParam('/recurrence/at', 'must not be in the past');
    return;
  }
  if (recurrence.type !== 'cron') return;
  const param = '/recurrence/expression';
  const fields = recurrence.expression.trim().split(/\s+/);
  if (fields.length !== 5) {
    throw invalidParam(param, `must have 5 fields (minute, hour, day of month, month, day of week); it has ${fields.length}`);
  }
  let cron: Cron;
  try {
    cron = cronOf(recurrence.expression, timeZone);
  } catch (error) {
    throw invalidParam(param, `is not a valid cron expression: ${error instanceof Error ? error.message : String(error)}`);
  }
  const firings = cron.nextRuns(SPACING_CHECKED_FIRINGS, new Date(from.getTime() - 1));
  if (firings.length === 0) throw invalidParam(param, 'never matches a date');
  for (let i = 1; i < firings.length; i++) {
    const gap = firings[i]!.getTime() - firings[i - 1]!.getTime();
    if (gap < MIN_SPACING_SECONDS * SECOND) {
      throw invalidParam(
        param,
        `fires ${gap / SECOND} s apart (${firings[i - 1]!.toISOString()} and ${firings[i]!.toISOString()}); occurrences must be at least ${MIN_SPACING_SECONDS / 60} minutes apart`,
      );
    }
  }
}

/**
 * The first slot after `after` (at or after it when `inclusive`), not before the start and before
 * the end; null when none remains.
 */
export function slotAfter(timing: Timing, after: Date, inclusive = false): Date | null {
  const { recurrence, startAt, endAt } = timing;
  // Before the start, the start itself is the bound, and it is inclusive.
  const beforeStart = after.getTime() < startAt.getTime();
  const from = beforeStart ? startAt.getTime() : after.getTime();
  const included = beforeStart || inclusive;
  let slot: number | null;
  switch (recurrence.type) {
    case 'once': {
      const at = Date.parse(recurrence.at);
      slot = at >= startAt.getTime() && (included ? at >= from : at > from) ? at : null;
      break;
    }
    case 'interval': {
      const every = recurrence.every_seconds * SECOND;
      const elapsed = from - startAt.getTime();
      const k = included ? Math.ceil(elapsed / every) : Math.floor(elapsed / every) + 1;
      slot = startAt.getTime() + Math.max(k, 0) * every;
      break;
    }
    case 'cron': {
      // croner answers the first run strictly after the whole second it is given: one millisecond
      // earlier makes a run exactly at `from` count.
      const next = cronOf(recurrence.expression, timing.timeZone).nextRun(new Date(included ? from - 1 : from));
      slot = next ? next.getTime() : null;
      break;
    }
  }
  if (slot === null || (endAt && slot >= endAt.getTime())) return null;
  return new Date(slot);
}

/** Up to `count` slots after `after` (at or after, when `inclusive`), in order. */
export function slotsAfter(timing: Timing, after: Date, count: number, inclusive = false): Date[] {
  const slots: Date[] = [];
  let next = slotAfter(timing, after, inclusive);
  while (next && slots.length < count) {
    slots.push(next);
    next = slotAfter(timing, next);
  }
  return slots;
}

/** The slots from `from` to `to`, both included, in order: at most `max`. */
export function slotsThrough(timing: Timing, from: Date, to: Date, max: number): Date[] {
  const slots: Date[] = [];
  for (let next = slotAfter(timing, from, true); next && next.getTime() <= to.getTime() && slots.length < max; next = slotAfter(timing, next)) slots.push(next);
  return slots;
}

/** The last slot strictly before `before`, not before the start and before the end; null when there is none. */
export function lastSlotBefore(timing: Timing, before: Date): Date | null {
  const { recurrence, startAt, endAt } = timing;
  const bound = endAt && endAt.getTime() < before.getTime() ? endAt.getTime() : before.getTime();
  let slot: number | null;
  switch (recurrence.type) {
    case 'once': {
      const at = Date.parse(recurrence.at);
      slot = at < bound ? at : null;
      break;
    }
    case 'interval': {
      const every = recurrence.every_seconds * SECOND;
      const k = Math.ceil((bound - startAt.getTime()) / every) - 1;
      slot = k < 0 ? null : startAt.getTime() + k * every;
      break;
    }
    case 'cron': {
      const [previous] = cronOf(recurrence.expression, timing.timeZone).previousRuns(1, new Date(bound));
      slot = previous ? previous.getTime() : null;
      break;
    }
  }
  return slot === null || slot < startAt.getTime() ? null : new Date(slot);
}

// One formatter per zone: building one costs far more than using it.
const offsetFormats = new Map<string, Intl.DateTimeFormat>();
const localFormats = new Map<string, Intl.DateTimeFormat>();

function formatFor(cache: Map<string, Intl.DateTimeFormat>, timeZone: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  let format = cache.get(timeZone);
  if (!format) cache.set(timeZone, (format = new Intl.DateTimeFormat('en-US', { timeZone, ...options })));
  return format;
}

/** `GMT+02:00` (or `GMT` at zero) as `+02:00`, from the runtime's time-zone data. */
function offsetText(date: Date, timeZone: string): string {
  const name = formatFor(offsetFormats, timeZone, { timeZoneName: 'longOffset' })
    .formatToParts(date)
    .find((part) => part.type === 'timeZoneName')!.value;
  return name === 'GMT' ? '+00:00' : name.slice(3);
}

/** The zone's offset from UTC at `date`, in minutes (`+02:00` is 120). */
export function offsetMinutes(date: Date, timeZone: string): number {
  const [, sign, hours, minutes] = /^([+-])(\d{2}):(\d{2})$/.exec(offsetText(date, timeZone))!;
  return (sign === '-' ? -1 : 1) * (Number(hours) * 60 + Number(minutes));
}

/** `date` in the zone, ISO 8601 with its offset: `2026-03-29T03:00:00+02:00`. */
export function localIso(date: Date, timeZone: string): string {
  const parts = formatFor(localFormats, timeZone, {
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(date);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((each) => each.type === type)!.value;
  return `${part('year')}-${part('month')}-${part('day')}T${part('hour')}:${part('minute')}:${part('second')}${offsetText(date, timeZone)}`;
}

/** The wall-clock reading of an instant at a fixed offset: `[date, HH:MM]`. */
function wallAt(instant: number, offset: number): [string, string] {
  const iso = new Date(instant + offset * MINUTE).toISOString();
  return [iso.slice(0, 10), iso.slice(11, 16)];
}

/**
 * Why a cron slot is not one of the expression's own times: it was moved out of a spring-forward gap,
 * where the local times it names do not exist (`02:30 does not exist on 2026-03-29 in Europe/Berlin
 * (the clocks go from 02:00 to 03:00); ran at 03:00`). Null for every other slot.
 *
 * croner runs such a time at the end of the gap. The times it stood for are found by reading the
 * expression at the offset the zone had before the gap, where they do exist: those that land in the
 * gap's length of real time from its end.
 */
export function gapNote(timing: Timing, slot: Date): string | null {
  const { recurrence, timeZone } = timing;
  if (recurrence.type !== 'cron' || cronOf(recurrence.expression, timeZone).match(slot)) return null;
  const before = offsetMinutes(new Date(slot.getTime() - MINUTE), timeZone);
  const after = offsetMinutes(slot, timeZone);
  if (after <= before) return null;
  const gapEnd = slot.getTime() + (after - before) * MINUTE;
  const unshifted = new Cron(recurrence.expression, { utcOffset: before, mode: '5-part', paused: true });
  const skipped: string[] = [];
  let date = '';
  for (let next = unshifted.nextRun(new Date(slot.getTime() - 1)); next && next.getTime() < gapEnd; next = unshifted.nextRun(next)) {
    const [day, time] = wallAt(next.getTime(), before);
    date = day;
    skipped.push(time);
  }
  if (skipped.length === 0) return null;
  const [, from] = wallAt(slot.getTime(), before);
  const [, to] = wallAt(slot.getTime(), after);
  const times = skipped.length === 1 ? `${skipped[0]} does not exist` : `${skipped.join(', ')} do not exist`;
  return `${times} on ${date} in ${timeZone} (the clocks go from ${from} to ${to}); ran at ${to}`;
}

const UNITS = [
  [86_400, 'day'],
  [3600, 'hour'],
  [60, 'minute'],
  [1, 'second'],
] as const;

/** The recurrence in words, for people: `At 09:00, Monday through Friday (Europe/Berlin)`. */
export function describeRecurrence(recurrence: ScheduleRecurrence, timeZone: string): string {
  switch (recurrence.type) {
    case 'once': {
      const local = localIso(new Date(recurrence.at), timeZone);
      return `Once, on ${local.slice(0, 10)} at ${local.slice(11, 16)} (${timeZone})`;
    }
    case 'interval': {
      const [size, unit] = UNITS.find(([seconds]) => recurrence.every_seconds % seconds === 0)!;
      const count = recurrence.every_seconds / size;
      return count === 1 ? `Every ${unit}` : `Every ${count} ${unit}s`;
    }
    case 'cron':
      try {
        return `${cronstrue.toString(recurrence.expression, { use24HourTimeFormat: true, throwExceptionOnParseError: true })} (${timeZone})`;
      } catch {
        // croner accepts a few forms cronstrue cannot put into words: the expression says it best then.
        return `At the times of the cron expression "${recurrence.expression}" (${timeZone})`;
      }
  }
}
