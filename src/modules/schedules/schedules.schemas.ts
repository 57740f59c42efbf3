import Type, { type Static } from 'typebox';
import { Discriminated, Id, ListOf, ListQuery, Metadata, MetadataPatch, Nullable, Strict, StoredJsonOf, Timestamp } from '../../http/schemas.ts';
import { NotificationTargetSchema } from '../notifications/notification-target.schemas.ts';

export const SCHEDULE_STATUSES = ['active', 'paused', 'completed'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];

/** What a client may set: `completed` is the service's to decide. */
export const SETTABLE_STATUSES = ['active', 'paused'] as const;

export const OVERLAP_POLICIES = ['skip', 'allow'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** `pending` only for the computed upcoming ones (`?include=upcoming`), which are not stored. */
export const OCCURRENCE_STATUSES = ['pending', 'fired', 'skipped', 'missed', 'failed', 'canceled'] as const;
export type OccurrenceStatus = (typeof OCCURRENCE_STATUSES)[number];

/** Occurrences at least five minutes apart: a cron that fires more often, or a shorter interval, is refused. */
export const MIN_SPACING_SECONDS = 300;
export const MAX_INTERVAL_SECONDS = 366 * 86_400;
export const CATCHUP_WINDOW_DEFAULT_SECONDS = 3600;
export const CATCHUP_WINDOW_MIN_SECONDS = 60;
export const CATCHUP_WINDOW_MAX_SECONDS = 86_400;
export const MAX_OCCURRENCES_LIMIT = 1_000_000;

const DateTime = (description: string) => Type.String({ format: 'date-time', description });

const OnceRecurrence = Strict(
  { type: Type.Literal('once'), at: DateTime('When it fires: ISO 8601 with an offset (`2026-07-01T09:00:00+02:00`); not in the past.') },
  { description: 'One occurrence, at `at`.' },
);
const CronRecurrence = Strict(
  {
    type: Type.Literal('cron'),
    expression: Type.String({
      minLength: 9,
      maxLength: 200,
      description: 'Five fields (minute, hour, day of month, month, day of week), read in the schedule’s `timezone`; occurrences at least 5 minutes apart.',
    }),
  },
  { description: 'Occurrences at the times a five-field cron expression names, in the schedule’s time zone.' },
);
const IntervalRecurrence = Strict(
  {
    type: Type.Literal('interval'),
    every_seconds: Type.Integer({
      minimum: MIN_SPACING_SECONDS,
      maximum: MAX_INTERVAL_SECONDS,
      description: 'Seconds between occurrences, counted from `start_at`: at least 300. Real time: a DST change does not move it.',
    }),
  },
  { description: 'An occurrence every `every_seconds`, the first at `start_at`.' },
);

export const RecurrenceBody = Discriminated(
  'type',
  { once: OnceRecurrence, cron: CronRecurrence, interval: IntervalRecurrence },
  { description: 'When occurrences come due: `once`, `cron` or `interval`.' },
);
export const RecurrenceSchema = Type.Union([OnceRecurrence, CronRecurrence, IntervalRecurrence]);
export type ScheduleRecurrence = Static<typeof RecurrenceSchema>;

export const AutomationTargetSchema = Strict(
  {
    type: Type.Literal('automation'),
    automation_id: Id('automation'),
    input: Type.Record(Type.String(), Type.Unknown(), { description: 'The run’s input.' }),
    conversation_id: Type.Optional(Id('conversation')),
  },
  { description: 'Each occurrence starts a run of the automation. Accepted once automations exist; refused until then (`operation_unsupported`).' },
);
export type AutomationTarget = Static<typeof AutomationTargetSchema>;

export const TargetBody = Discriminated(
  'type',
  { notification: NotificationTargetSchema, automation: AutomationTargetSchema },
  { description: 'What each occurrence creates: notifications, or (later) an automation run.' },
);
export const TargetSchema = Type.Union([NotificationTargetSchema, AutomationTargetSchema]);
export type ScheduleTarget = Static<typeof TargetSchema>;

const Name = Type.String({ minLength: 1, maxLength: 200 });
const TimeZone = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'An IANA time zone (`Europe/Berlin`); cron expressions and local times are read in it. Default `UTC`.',
});
const StartAt = DateTime('No occurrence before it; an interval counts from it. Default: when the schedule is created.');
const EndAt = DateTime('No occurrence at or after it; after `start_at`.');
const MaxOccurrences = Type.Integer({
  minimum: 1,
  maximum: MAX_OCCURRENCES_LIMIT,
  description: 'The schedule completes once this many occurrences fired or failed (skipped and missed ones do not count).',
});
const Overlap = Type.Enum(OVERLAP_POLICIES, {
  description:
    'When several occurrences are due at once because the schedule fell behind (within the catch-up window): `skip` (default) fires only the latest and records the others `skipped`; `allow` fires each in turn.',
});
const CatchupWindow = Type.Integer({
  minimum: CATCHUP_WINDOW_MIN_SECONDS,
  maximum: CATCHUP_WINDOW_MAX_SECONDS,
  description: 'How late an occurrence may still fire, in seconds (default 3600, at most 86400); later it is recorded `missed`.',
});

export const ScheduleSchema = Type.Object({
  id: Id('schedule'),
  object: Type.Literal('schedule'),
  name: Nullable(Type.String()),
  status: Type.Enum(SCHEDULE_STATUSES, {
    description: '`active`; `paused` (by a PATCH, or by the service after 5 failed occurrences in a row); `completed` once no occurrence remains.',
  }),
  paused_reason: Nullable(Type.String({ description: 'Why the service paused it; null when a request paused it, or when not paused.' })),
  timezone: Type.String(),
  recurrence: RecurrenceSchema,
  start_at: Timestamp,
  end_at: Nullable(Timestamp),
  max_occurrences: Nullable(Type.Integer()),
  overlap_policy: Type.Enum(OVERLAP_POLICIES),
  catchup_window_seconds: Type.Integer(),
  // Returned as stored: the target is written once, and its template parameters' schema (a union
  // told apart by `if`/`then`) is not one fast-json-stringify can serialize.
  target: StoredJsonOf(TargetSchema),
  next_occurrence_at: Nullable(Timestamp, { description: 'When the next occurrence is due; null unless active.' }),
  last_occurrence_at: Nullable(Timestamp, { description: 'The `scheduled_for` of the latest occurrence recorded, whatever its status.' }),
  occurrence_count: Type.Integer({ description: 'Occurrences that fired or failed.' }),
  consecutive_failures: Type.Integer({ description: 'Failed occurrences since the last one that fired; at 5 the schedule pauses.' }),
  description: Type.String({ description: 'The recurrence in words (`At 09:00, Monday through Friday (Europe/Berlin)`).' }),
  metadata: Metadata,
  revision: Type.Integer({ description: 'Starts at 1; every change through the API adds one.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Schedule = Static<typeof ScheduleSchema>;

export const CreateScheduleBody = Strict({
  name: Type.Optional(Name),
  status: Type.Optional(Type.Enum(SETTABLE_STATUSES, { default: 'active', description: 'Create it `paused` to start it later with a PATCH.' })),
  timezone: Type.Optional(TimeZone),
  recurrence: RecurrenceBody,
  start_at: Type.Optional(StartAt),
  end_at: Type.Optional(EndAt),
  max_occurrences: Type.Optional(MaxOccurrences),
  overlap_policy: Type.Optional(Overlap),
  catchup_window_seconds: Type.Optional(CatchupWindow),
  target: TargetBody,
  metadata: Type.Optional(Metadata),
});
export type CreateScheduleInput = Static<typeof CreateScheduleBody>;

export const PREVIEW_DEFAULT_COUNT = 5;

export const PreviewScheduleBody = Strict({
  timezone: Type.Optional(TimeZone),
  recurrence: RecurrenceBody,
  start_at: Type.Optional(StartAt),
  end_at: Type.Optional(EndAt),
  max_occurrences: Type.Optional(MaxOccurrences),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 20, description: `How many occurrences to show (default ${PREVIEW_DEFAULT_COUNT}, at most 20).` })),
});
export type PreviewScheduleInput = Static<typeof PreviewScheduleBody>;

export const SchedulePreviewSchema = Type.Object({
  object: Type.Literal('schedule_preview'),
  timezone: Type.String({ description: 'The time zone as the service resolved it (canonical letter case).' }),
  description: Type.String({ description: 'The recurrence in words, as a schedule made from it would say.' }),
  occurrences: Type.Array(
    Type.Object({
      scheduled_for: Timestamp,
      scheduled_for_local: Type.String({ description: 'The same time in the time zone, with its offset, as an occurrence says it.' }),
      reason: Nullable(Type.String({ description: 'Why it is not at the time the recurrence names (moved out of a daylight-saving gap); null otherwise.' })),
    }),
  ),
});
export type SchedulePreview = Static<typeof SchedulePreviewSchema>;

export const UpdateScheduleBody = Strict({
  name: Type.Optional(Nullable(Name)),
  status: Type.Optional(Type.Enum(SETTABLE_STATUSES, { description: '`paused` pauses it; `active` resumes it from now (and clears its failures).' })),
  timezone: Type.Optional(TimeZone),
  recurrence: Type.Optional(RecurrenceBody),
  start_at: Type.Optional(StartAt),
  end_at: Type.Optional(Nullable(EndAt)),
  max_occurrences: Type.Optional(Nullable(MaxOccurrences)),
  overlap_policy: Type.Optional(Overlap),
  catchup_window_seconds: Type.Optional(CatchupWindow),
  target: Type.Optional(TargetBody),
  metadata: Type.Optional(MetadataPatch),
});
export type UpdateScheduleInput = Static<typeof UpdateScheduleBody>;

export const ScheduleListQuery = ListQuery({ status: Type.Optional(Type.Enum(SCHEDULE_STATUSES)) });
export const ScheduleListSchema = ListOf(ScheduleSchema);

export const OccurrenceResultSchema = Type.Object(
  {
    notification_id: Type.Optional(Id('notification')),
    batch_id: Type.Optional(Type.String({ description: 'The notification batch (`ntb_`), for a target of several recipients.' })),
    run_id: Type.Optional(Id('run')),
  },
  { description: 'What the occurrence created: one of `notification_id`, `batch_id` or `run_id`.' },
);

export const ScheduleOccurrenceSchema = Type.Object({
  id: Nullable(Id('scheduleOccurrence'), { description: 'Null for an upcoming occurrence, which is computed, not stored.' }),
  object: Type.Literal('schedule_occurrence'),
  schedule_id: Id('schedule'),
  scheduled_for: Timestamp,
  scheduled_for_local: Type.String({ description: 'The same time in the schedule’s time zone, with its offset (`2026-03-29T03:00:00+02:00`).' }),
  status: Type.Enum(OCCURRENCE_STATUSES),
  reason: Nullable(
    Type.String({ description: 'Why it is what it is: a DST gap it was moved out of, why it was skipped or missed. Null when there is nothing to say.' }),
  ),
  fired_at: Nullable(Timestamp),
  result: Nullable(OccurrenceResultSchema),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() }), { description: 'Why a `failed` occurrence failed.' }),
  created_at: Nullable(Timestamp, { description: 'When it was recorded; null for an upcoming one.' }),
});
export type ScheduleOccurrence = Static<typeof ScheduleOccurrenceSchema>;

export const OccurrenceListQuery = ListQuery({
  include: Type.Optional(
    Type.Literal('upcoming', {
      description:
        'Adds up to `limit` upcoming occurrences (status `pending`, computed, not stored) to the page that has no cursor: first in `desc` order, last in `asc`.',
    }),
  ),
});
export const OccurrenceListSchema = ListOf(ScheduleOccurrenceSchema);
