/**
 * The schedule's recurrence in the browser, computed as the service computes it
 * (src/modules/schedules/recurrence.ts), so a form shows, before saving, the description and the
 * occurrences the service will store and fire: croner with the same options (five fields, the
 * schedule's time zone, `fixedTimeRule: 'no-wildcard'`) and cronstrue with the same ones. The
 * dashboard may not import that server file (it bundles only schema files), and the API has no
 * preview endpoint, so these few functions mirror it; the service checks everything again on save.
 * Bundled only with the schedules pages.
 */
import { Cron } from 'croner';
import cronstrue from 'cronstrue';
import type { ScheduleRecurrence } from './types.ts';

const SECOND = 1000;
/** MIN_SPACING_SECONDS and SPACING_CHECKED_FIRINGS on the server. */
const MIN_SPACING_SECONDS = 300;
const SPACING_CHECKED_FIRINGS = 50;

export interface Timing {
  recurrence: ScheduleRecurrence;
  timeZone: string;
  startAt: Date;
  endAt: Date | null;
}

const IANA_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/** The zone's name in its canonical letter case, if the browser's time-zone data knows it. */
export function resolveTimeZone(name: string): string | undefined {
  if (!IANA_NAME.test(name)) return undefined;
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    return resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
  } catch {
    return undefined;
  }
}

function cronOf(expression: string, timeZone: string): Cron {
  return new Cron(expression, { timezone: timeZone, mode: '5-part', fixedTimeRule: 'no-wildcard', paused: true });
}

/** What the service would refuse in the recurrence itself (its message, and the field it names), or null. */
export function recurrenceProblem(recurrence: ScheduleRecurrence, timeZone: string, now: Date, from: Date): { param: string; message: string } | null {
  if (recurrence.type === 'once') {
    return new Date(recurrence.at).getTime() < now.getTime() ? { param: 'recurrence/at', message: 'The time is in the past.' } : null;
  }
  if (recurrence.type === 'interval') {
    return recurrence.every_seconds < MIN_SPACING_SECONDS
      ? { param: 'recurrence/every_seconds', message: 'Occurrences must be at least 5 minutes apart.' }
      : null;
  }
  const param = 'recurrence/expression';
  const fields = recurrence.expression.trim().split(/\s+/);
  if (fields.length !== 5)
    return { param, message: `A cron expression has 5 fields (minute, hour, day of month, month, day of week); this has ${fields.length}.` };
  let cron: Cron;
  try {
    cron = cronOf(recurrence.expression, timeZone);
  } catch (error) {
    return { param, message: `Not a valid cron expression: ${error instanceof Error ? error.message : String(error)}` };
  }
  const firings = cron.nextRuns(SPACING_CHECKED_FIRINGS, new Date(from.getTime() - 1));
  if (firings.length === 0) return { param, message: 'It never matches a date.' };
  for (let i = 1; i < firings.length; i++) {
    const gap = firings[i]!.getTime() - firings[i - 1]!.getTime();
    if (gap < MIN_SPACING_SECONDS * SECOND) {
      return { param, message: `It fires ${gap / SECOND} s apart; occurrences must be at least 5 minutes apart.` };
    }
  }
  return null;
}

/** The service's `slotAfter`: the first slot after `after` (at or after it when `inclusive`), within the bounds. */
export function slotAfter(timing: Timing, after: Date, inclusive = false): Date | null {
  const { recurrence, startAt, endAt } = timing;
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
      const next = cronOf(recurrence.expression, timing.timeZone).nextRun(new Date(included ? from - 1 : from));
      slot = next ? next.getTime() : null;
      break;
    }
  }
  if (slot === null || (endAt && slot >= endAt.getTime())) return null;
  return new Date(slot);
}

/**
 * The next `count` occurrences as the service would queue them from `now`: the first at or after
 * it (after the latest one recorded, for a schedule that has some), none past `remaining`.
 */
export function nextOccurrences(timing: Timing, now: Date, count: number, last: Date | null = null, remaining = Infinity): Date[] {
  const slots: Date[] = [];
  let next = last && last.getTime() >= now.getTime() ? slotAfter(timing, last) : slotAfter(timing, now, true);
  while (next && slots.length < Math.min(count, remaining)) {
    slots.push(next);
    next = slotAfter(timing, next);
  }
  return slots;
}

const localFormats = new Map<string, Intl.DateTimeFormat>();

/** `date` in the zone as `YYYY-MM-DDTHH:mm` (what a `datetime-local` field holds). */
export function localInput(date: Date, timeZone: string): string {
  let format = localFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    localFormats.set(timeZone, format);
  }
  const parts = format.formatToParts(date);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((each) => each.type === type)!.value;
  return `${part('year')}-${part('month')}-${part('day')}T${part('hour')}:${part('minute')}`;
}

/**
 * A wall-clock time in a zone (`2026-07-01T09:00` in Europe/Berlin) as an instant. croner reads an
 * ISO date without offset in the zone it is given, so the zone's rules are the runtime's own, as on
 * the server; a time in a spring-forward gap lands after it.
 */
export function instantIn(local: string, timeZone: string): Date | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(local)) return null;
  try {
    return new Cron(`${local}:00`, { timezone: timeZone, paused: true }).nextRun(new Date(0));
  } catch {
    return null;
  }
}

const UNITS = [
  [86_400, 'day'],
  [3600, 'hour'],
  [60, 'minute'],
  [1, 'second'],
] as const;

/** The service's `describeRecurrence`: the words it stores as the schedule's `description`. */
export function describeRecurrence(recurrence: ScheduleRecurrence, timeZone: string): string {
  switch (recurrence.type) {
    case 'once': {
      const local = localInput(new Date(recurrence.at), timeZone);
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
        return `At the times of the cron expression "${recurrence.expression}" (${timeZone})`;
      }
  }
}

/** An occurrence for people: its time in the schedule's zone, and in the reader's when that differs. */
export function occurrenceText(date: Date, timeZone: string): string {
  const inZone = date.toLocaleString([], { timeZone, dateStyle: 'medium', timeStyle: 'short' });
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const mine = date.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
  return resolveTimeZone(here) === resolveTimeZone(timeZone) || mine === inZone ? `${inZone} (${timeZone})` : `${inZone} (${timeZone}) · ${mine} your time`;
}
