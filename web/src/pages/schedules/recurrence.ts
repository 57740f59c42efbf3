/**
 * Wall-clock times for the schedule forms: a `datetime-local` field holds a time in the schedule's
 * zone, the API takes instants. What the recurrence means (its words, its occurrences, what would be
 * refused) is the service's to say: the forms ask `POST /v1/schedules/preview` (RecurrenceFields).
 * croner reads a zone's local time here, with the runtime's time-zone data, as on the server.
 * Bundled only with the schedules pages.
 */
import { Cron } from 'croner';

/** Whether the browser's time-zone data knows the zone (the service decides for good). */
export function knownTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return name.length > 0;
  } catch {
    return false;
  }
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

/** An occurrence for people: its time in the schedule's zone, and in the reader's when that differs. */
export function occurrenceText(date: Date, timeZone: string): string {
  const inZone = date.toLocaleString([], { timeZone, dateStyle: 'medium', timeStyle: 'short' });
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const mine = date.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
  return here === timeZone || mine === inZone ? `${inZone} (${timeZone})` : `${inZone} (${timeZone}) · ${mine} your time`;
}
