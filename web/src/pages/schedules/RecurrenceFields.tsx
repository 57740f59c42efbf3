import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { ApiError } from '../../api/client.ts';
import type { SchedulePreview } from '../../../../src/modules/schedules/schedules.schemas.ts';
import { useApi } from '../../auth/SessionContext.tsx';
import { errorFor, SelectField, TextField } from '../../ui/controls.tsx';
import { instantIn, knownTimeZone, localInput, occurrenceText } from './recurrence.ts';
import styles from '../templates/templates.module.css';
import type { Schedule, ScheduleRecurrence } from './types.ts';

/** The recurrence part of the create and edit forms, as typed: times are wall-clock times in the schedule's zone. */
export interface RecurrenceDraft {
  type: ScheduleRecurrence['type'];
  expression: string;
  every: string;
  unit: keyof typeof UNIT_SECONDS;
  at: string;
  timezone: string;
  startAt: string;
  endAt: string;
  maxOccurrences: string;
}

const UNIT_SECONDS = { minutes: 60, hours: 3600, days: 86_400 } as const;
const PREVIEWED = 5;

const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

/** A new schedule's draft (in the reader's own zone), or an existing one's as stored. */
export function draftOf(schedule?: Schedule): RecurrenceDraft {
  const timezone = schedule?.timezone ?? browserZone();
  const draft: RecurrenceDraft = {
    type: 'cron',
    expression: '0 9 * * 1-5',
    every: '1',
    unit: 'hours',
    at: '',
    timezone,
    startAt: '',
    endAt: '',
    maxOccurrences: '',
  };
  if (!schedule) return draft;
  const recurrence = schedule.recurrence;
  draft.type = recurrence.type;
  if (recurrence.type === 'cron') draft.expression = recurrence.expression;
  if (recurrence.type === 'once') draft.at = localInput(new Date(recurrence.at), timezone);
  if (recurrence.type === 'interval') {
    const unit = (['days', 'hours', 'minutes'] as const).find((name) => recurrence.every_seconds % UNIT_SECONDS[name] === 0) ?? 'minutes';
    draft.unit = unit;
    draft.every = String(recurrence.every_seconds / UNIT_SECONDS[unit]);
  }
  draft.startAt = localInput(new Date(schedule.start_at), timezone);
  draft.endAt = schedule.end_at ? localInput(new Date(schedule.end_at), timezone) : '';
  draft.maxOccurrences = schedule.max_occurrences === null ? '' : String(schedule.max_occurrences);
  return draft;
}

export interface ReadDraft {
  recurrence: ScheduleRecurrence | null;
  timezone: string | null;
  startAt: Date | null;
  endAt: Date | null;
  maxOccurrences: number | null;
  /** What cannot even be sent (an unreadable field), found before asking the service. */
  problem: { param: string; message: string } | null;
}

/** The draft as the API's values; an unreadable part is a problem on its field. */
export function readDraft(draft: RecurrenceDraft, now: Date): ReadDraft {
  const timezone = knownTimeZone(draft.timezone.trim()) ? draft.timezone.trim() : null;
  const read: ReadDraft = { recurrence: null, timezone, startAt: null, endAt: null, maxOccurrences: null, problem: null };
  if (!timezone) return { ...read, problem: { param: 'timezone', message: 'Not a time zone this browser knows: a name such as Europe/Berlin or UTC.' } };
  read.startAt = draft.startAt ? instantIn(draft.startAt, timezone) : null;
  read.endAt = draft.endAt ? instantIn(draft.endAt, timezone) : null;
  read.maxOccurrences = draft.maxOccurrences ? Number(draft.maxOccurrences) : null;
  if (draft.type === 'cron') read.recurrence = { type: 'cron', expression: draft.expression.trim() };
  else if (draft.type === 'interval') read.recurrence = { type: 'interval', every_seconds: Math.round(Number(draft.every) * UNIT_SECONDS[draft.unit]) };
  else {
    const at = instantIn(draft.at, timezone);
    if (!at) return { ...read, problem: { param: 'recurrence/at', message: 'Choose the date and time.' } };
    read.recurrence = { type: 'once', at: at.toISOString() };
  }
  if (read.endAt && read.endAt.getTime() <= (read.startAt ?? now).getTime()) {
    return { ...read, problem: { param: 'end_at', message: 'The end must be after the start.' } };
  }
  return read;
}

/**
 * A stored time the field still shows (to the minute): the stored instant itself, seconds and all,
 * since that is what the service goes by (an interval counts from its exact start).
 */
function storedUnlessChanged(field: string, stored: string | null | undefined, timeZone: string): Date | null {
  return stored && field === localInput(new Date(stored), timeZone) ? new Date(stored) : null;
}

/**
 * The recurrence's fields, and beside them what the service will make of it: the description it
 * stores and the next occurrences it will fire, computed here as it computes them.
 */
export function RecurrenceFields({
  draft,
  onChange,
  refusal,
  existing,
}: {
  draft: RecurrenceDraft;
  onChange: (draft: RecurrenceDraft) => void;
  refusal: unknown;
  /** When editing: the schedule as stored (its start, its latest occurrence, how many remain). */
  existing?: Schedule;
}) {
  const zones = useId();
  const now = new Date();
  const read = readDraft(draft, now);
  const set = <K extends keyof RecurrenceDraft>(key: K, value: RecurrenceDraft[K]) => onChange({ ...draft, [key]: value });
  // What the service makes of it: its words and its next occurrences, or its refusal (on the field
  // a create would name). The previous answer stays shown while the next is on its way.
  const api = useApi();
  const body =
    read.recurrence && read.timezone && !read.problem
      ? {
          recurrence: read.recurrence,
          timezone: read.timezone,
          start_at: (storedUnlessChanged(draft.startAt, existing?.start_at, read.timezone) ?? read.startAt)?.toISOString(),
          end_at: (storedUnlessChanged(draft.endAt, existing?.end_at, read.timezone) ?? read.endAt)?.toISOString(),
          max_occurrences: read.maxOccurrences === null ? undefined : Math.max(1, read.maxOccurrences - (existing?.occurrence_count ?? 0)),
          count: PREVIEWED,
        }
      : null;
  const preview = useQuery({
    queryKey: ['schedule-preview', body],
    queryFn: ({ signal }) => api.post<SchedulePreview>('/v1/schedules/preview', body, { readOnly: true, signal }),
    enabled: body !== null,
    placeholderData: keepPreviousData,
    retry: false,
    staleTime: 30_000,
  });
  const refused = body !== null && preview.error instanceof ApiError ? preview.error : null;
  const fieldError = (param: string) => errorFor(refusal, param) ?? errorFor(refused, param) ?? (read.problem?.param === param ? read.problem.message : null);
  const shown = body !== null && !refused ? preview.data : undefined;
  const occurrences = shown?.occurrences.map((occurrence) => new Date(occurrence.scheduled_for)) ?? [];
  return (
    <div className={styles.split}>
      <div className={styles.stack}>
        <div className={styles.grid}>
          <SelectField label="Repeats" value={draft.type} onChange={(event) => set('type', event.target.value as RecurrenceDraft['type'])}>
            <option value="cron">On a cron expression</option>
            <option value="interval">Every so often</option>
            <option value="once">Once</option>
          </SelectField>
          <TextField
            label="Time zone"
            list={zones}
            value={draft.timezone}
            onChange={(event) => set('timezone', event.target.value)}
            hint="Cron times and the dates below are read in it."
            error={fieldError('timezone')}
          />
          <datalist id={zones}>
            {Intl.supportedValuesOf('timeZone').map((zone) => (
              <option key={zone} value={zone} />
            ))}
          </datalist>
        </div>
        {draft.type === 'cron' && (
          <TextField
            label="Cron expression"
            value={draft.expression}
            onChange={(event) => set('expression', event.target.value)}
            hint="Five fields: minute, hour, day of month, month, day of week (0 9 * * 1-5 is 09:00 on weekdays). At least 5 minutes apart."
            error={fieldError('recurrence/expression')}
          />
        )}
        {draft.type === 'interval' && (
          <div className={styles.grid}>
            <TextField
              label="Every"
              type="number"
              min={1}
              value={draft.every}
              onChange={(event) => set('every', event.target.value)}
              error={fieldError('recurrence/every_seconds')}
              hint="At least 5 minutes. Counted from the start, in real time (a DST change moves it on the wall clock)."
            />
            <SelectField label="Unit" value={draft.unit} onChange={(event) => set('unit', event.target.value as RecurrenceDraft['unit'])}>
              <option value="minutes">minutes</option>
              <option value="hours">hours</option>
              <option value="days">days</option>
            </SelectField>
          </div>
        )}
        {draft.type === 'once' && (
          <TextField
            label="At"
            type="datetime-local"
            value={draft.at}
            onChange={(event) => set('at', event.target.value)}
            error={fieldError('recurrence/at')}
          />
        )}
        <div className={styles.grid}>
          <TextField
            label="Start (optional)"
            type="datetime-local"
            value={draft.startAt}
            onChange={(event) => set('startAt', event.target.value)}
            hint={
              draft.type === 'interval' ? 'The first occurrence; empty is when you save, so it fires right away.' : 'No occurrence before it; empty is now.'
            }
            error={fieldError('start_at')}
          />
          <TextField
            label="End (optional)"
            type="datetime-local"
            value={draft.endAt}
            onChange={(event) => set('endAt', event.target.value)}
            hint="No occurrence at or after it."
            error={fieldError('end_at')}
          />
          <TextField
            label="At most (occurrences, optional)"
            type="number"
            min={1}
            value={draft.maxOccurrences}
            onChange={(event) => set('maxOccurrences', event.target.value)}
            hint="It completes after this many fired or failed."
            error={fieldError('max_occurrences')}
          />
        </div>
      </div>
      <section className={styles.preview} aria-label="When it runs" data-testid="recurrence-preview">
        <p className={styles.previewLabel}>When it runs</p>
        {shown ? (
          <p data-testid="recurrence-description">{shown.description}</p>
        ) : (
          <p className={styles.muted}>{body && preview.isFetching ? 'Asking the service…' : 'Complete the fields to see it in words.'}</p>
        )}
        {read.problem || refused ? (
          <p className={styles.problem}>The service will refuse this: {read.problem?.message ?? refused?.message}</p>
        ) : occurrences.length > 0 ? (
          <>
            <p className={styles.previewLabel}>Next {occurrences.length === 1 ? 'occurrence' : `${occurrences.length} occurrences`}</p>
            <ol className={styles.occurrences} aria-label="Next occurrences">
              {occurrences.map((date) => (
                <li key={date.getTime()} data-at={date.toISOString()}>
                  {occurrenceText(date, shown!.timezone)}
                </li>
              ))}
            </ol>
          </>
        ) : null}
      </section>
    </div>
  );
}
