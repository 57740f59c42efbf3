import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQueryProperties, Nullable, Strict, Timestamp } from '../../http/schemas.ts';

// The names the plans table (plans.ts) is written in: here, so that the API's schemas stand alone.
export const PLAN_NAMES = ['free', 'pro', 'scale'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

/**
 * Every meter `GET /v1/usage` reports. `messages_sent` is the sum of its four categories (what the
 * limits and the metered price count); `unique_recipients_24h` is per number, against its messaging
 * tier, not a plan.
 */
export const METERS = {
  messages_sent: 'messages',
  'messages_sent.marketing': 'messages',
  'messages_sent.utility': 'messages',
  'messages_sent.authentication': 'messages',
  'messages_sent.service': 'messages',
  messages_received: 'messages',
  notifications_sent: 'notifications',
  automation_runs: 'runs',
  webhook_deliveries: 'deliveries',
  media_bytes: 'bytes',
  api_requests: 'requests',
  unique_recipients_24h: 'recipients',
} as const;
export type MeterName = keyof typeof METERS;
export const METER_NAMES = Object.keys(METERS) as MeterName[];

export const MeterSchema = Type.Enum(METER_NAMES, { description: 'A usage meter (docs/usage.md#meters).' });

const Period = Type.String({
  pattern: '^(current|[0-9]{4}-(0[1-9]|1[0-2]))$',
  default: 'current',
  description: '`current` (the calendar month now, UTC) or a month as `YYYY-MM`.',
});

export const UsageMeterSchema = Type.Object({
  meter: MeterSchema,
  quantity: Type.Integer({ minimum: 0 }),
  unit: Type.String({ description: 'messages, notifications, runs, deliveries, bytes, requests or recipients.' }),
  limit: Nullable(Type.Integer(), {
    description: "The plan's monthly limit; for `unique_recipients_24h` with a `connection_id`, the number's messaging tier. Null: unlimited.",
  }),
  percent: Nullable(Type.Number(), { description: 'quantity / limit, in percent, to one decimal. Null without a limit.' }),
});

export const UsageSchema = Type.Object(
  {
    object: Type.Literal('usage'),
    plan: Type.Enum(PLAN_NAMES),
    connection_id: Nullable(Id('connection')),
    period_start: Timestamp,
    period_end: Timestamp,
    meters: Type.Array(UsageMeterSchema),
  },
  { description: "What the organization used in a calendar month (UTC), live traffic only, against its plan's limits." },
);
export type Usage = Static<typeof UsageSchema>;
export type UsageMeter = Static<typeof UsageMeterSchema>;

export const UsageQuery = Strict({
  period: Type.Optional(Period),
  connection_id: Type.Optional(Id('connection', 'Only what went through this number.')),
});

export const GROUP_BYS = ['day', 'connection', 'category', 'automation'] as const;
export type GroupBy = (typeof GROUP_BYS)[number];

export const UsageBreakdownQuery = Strict({
  meter: MeterSchema,
  group_by: Type.Optional(
    Type.Enum(GROUP_BYS, {
      default: 'day',
      description: '`day` (UTC), `connection`, `category` (messages_sent only) or `automation` (automation_runs only).',
    }),
  ),
  period: Type.Optional(Period),
  connection_id: Type.Optional(Id('connection', 'Only what went through this number.')),
  limit: ListQueryProperties.limit,
  after: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The previous page's `next_cursor`: the groups after it." })),
});

export const UsageBreakdownRowSchema = Type.Object(
  {
    object: Type.Literal('usage_breakdown_row'),
    meter: MeterSchema,
    unit: Type.String(),
    day: Type.Optional(Type.String({ description: 'group_by=day: the UTC day, `YYYY-MM-DD`.' })),
    connection_id: Type.Optional(Nullable(Id('connection'), { description: 'group_by=connection; null for what went through no number.' })),
    category: Type.Optional(Type.String({ description: 'group_by=category: marketing, utility, authentication or service.' })),
    automation_id: Type.Optional(Nullable(Id('automation'), { description: 'group_by=automation.' })),
    quantity: Type.Integer({ minimum: 0 }),
  },
  { description: 'One group of a usage breakdown: the field named by `group_by` and what it used.' },
);
export type UsageBreakdownRow = Static<typeof UsageBreakdownRowSchema>;
export const UsageBreakdownSchema = ListOf(UsageBreakdownRowSchema);

/** The object of `usage.threshold_reached`. */
export const UsageThresholdSchema = Type.Object({
  object: Type.Literal('usage_threshold'),
  meter: MeterSchema,
  connection_id: Nullable(Id('connection'), { description: 'The number, for `unique_recipients_24h` against its tier.' }),
  threshold_percent: Type.Integer(),
  quantity: Type.Integer(),
  limit: Type.Integer(),
  period_start: Timestamp,
  reached_at: Timestamp,
});
export type UsageThreshold = Static<typeof UsageThresholdSchema>;
