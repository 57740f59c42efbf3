import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { INT32_MAX } from '../../lib/integers.ts';
import { VERSION_NUMBER_RANGE } from '../automations/automations.schemas.ts';
import { TRIGGER_TYPES } from '../automations/definition.schemas.ts';

export const RUN_STATUSES = ['queued', 'running', 'waiting', 'paused', 'completed', 'canceled', 'failed', 'timed_out'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const ACTIVE_RUN_STATUSES = ['queued', 'running', 'waiting', 'paused'] as const satisfies readonly RunStatus[];
export const WAITING_FOR_TYPES = ['reply', 'approval', 'delay', 'control'] as const;

export const RunTriggerSchema = Type.Object(
  {
    type: Type.Enum(TRIGGER_TYPES),
    message_id: Type.Optional(Id('message')),
    event_id: Type.Optional(Id('event')),
    event_type: Type.Optional(Type.String()),
    occurrence_id: Type.Optional(Id('scheduleOccurrence')),
  },
  { description: 'What started the run: the message, the event or the schedule occurrence; nothing more for `api`.' },
);
export type RunTrigger = Static<typeof RunTriggerSchema>;

export const RunErrorSchema = Type.Object({
  code: Type.String({
    description: 'A catalogue code (`window_closed`, `template_not_approved`, ...) or a run rule (`loop_guard`, `expression_failed`, `step_failed`).',
  }),
  message: Type.String(),
  step_id: Nullable(Type.String()),
});
export type RunError = Static<typeof RunErrorSchema>;

export const WaitingForSchema = Type.Object({
  type: Type.Enum(WAITING_FOR_TYPES),
  until: Nullable(Timestamp),
  approval_id: Nullable(Type.String()),
});
export type WaitingFor = Static<typeof WaitingForSchema>;

export const RunSchema = Type.Object({
  id: Id('run'),
  object: Type.Literal('run'),
  automation_id: Id('automation'),
  version: Type.Integer({ description: 'The version the run executes; it is pinned to it unless a deploy migrates it.' }),
  mode: Type.Enum(['live', 'test'] as const),
  dry_run: Type.Boolean(),
  connection_id: Nullable(Id('connection')),
  conversation_id: Nullable(Id('conversation')),
  contact_id: Nullable(Id('contact')),
  trigger: RunTriggerSchema,
  status: Type.Enum(RUN_STATUSES),
  current_step_id: Nullable(Type.String()),
  waiting_for: Nullable(WaitingForSchema),
  input: Type.Record(Type.String(), Type.Unknown()),
  variables: Type.Record(Type.String(), Type.Unknown()),
  outcome: Nullable(Type.String({ description: '`completed`, `handed_off`, or the `outcome` of the `end` step that ended it.' })),
  error: Nullable(RunErrorSchema),
  steps_executed: Type.Integer(),
  replay_of: Nullable(Id('run')),
  timeout_at: Timestamp,
  started_at: Nullable(Timestamp),
  finished_at: Nullable(Timestamp),
  created_at: Timestamp,
});
export type Run = Static<typeof RunSchema>;

export const RunEventSchema = Type.Object({
  object: Type.Literal('run_event'),
  seq: Type.Integer({ description: 'From 1, in the order things happened to the run.' }),
  type: Type.String({ description: '`run.*`, `step.*`, `wait.*`, `control.*` or `effect.*` (docs/automations.md#the-event-log).' }),
  step_id: Nullable(Type.String()),
  at: Timestamp,
  data: Type.Record(Type.String(), Type.Unknown()),
});
export type RunEvent = Static<typeof RunEventSchema>;

const SimulatedReply = Strict({
  text: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'What the customer writes.' })),
  button_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Or: the reply button or list row the customer taps.' })),
  after_seconds: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 30 * 24 * 3600, default: 1, description: 'How long after the wait began the reply arrives.' }),
  ),
});

const SimulatedApproval = Strict({
  decision: Type.Enum(['approved', 'rejected', 'expired'] as const, { description: 'What the approvers decide (`expired`: nobody decides in time).' }),
  after_seconds: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 7 * 24 * 3600,
      default: 1,
      description: 'How long after the request the decision comes; at or past the approval’s deadline it expires instead.',
    }),
  ),
});

const SimulatedHttpAnswer = Strict({
  status: Type.Integer({ minimum: 100, maximum: 599, description: 'The answer’s status: 2xx takes the `ok` branch, anything else `error`.' }),
  body: Type.Optional(Type.Unknown({ description: 'What the answer carries, saved under `save_as` as the live answer’s parsed body would be.' })),
});

export const TriggerRunBody = Strict({
  automation_id: Id('automation'),
  input: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Checked against the definition’s `input_schema`; read as `input`.' })),
  conversation_id: Type.Optional(Id('conversation', 'The conversation the run acts in. At most one of conversation_id, contact_id and to.')),
  contact_id: Type.Optional(Id('contact', 'Or the customer, on the automation’s connection (or `connection_id`).')),
  to: Type.Optional(Type.String({ pattern: '^\\+[1-9][0-9]{6,14}$', description: 'Or a number in E.164; its contact is created on the first message.' })),
  connection_id: Type.Optional(Id('connection', 'The number, with contact_id or to, when the automation runs on every connection of its mode.')),
  dry_run: Type.Optional(Type.Boolean({ description: 'Run on a virtual clock, sending nothing, and answer with the whole event log.' })),
  version: Type.Optional(
    Type.Integer({
      ...VERSION_NUMBER_RANGE,
      description: 'The version to run; default the deployed one (required for a dry run of an undeployed automation).',
    }),
  ),
  replay_of: Type.Optional(Id('run', 'Run again with that run’s input and target, on its version unless `version` says otherwise.')),
  simulate: Type.Optional(
    Strict(
      {
        replies: Type.Optional(Type.Array(SimulatedReply, { maxItems: 100, description: 'Dry runs: each wait_for_reply takes the next reply, in order.' })),
        approvals: Type.Optional(
          Type.Array(SimulatedApproval, {
            maxItems: 100,
            description: 'Dry runs: each request_approval step takes the next decision, in order; none left, it expires at its deadline.',
          }),
        ),
        http: Type.Optional(
          Type.Array(SimulatedHttpAnswer, {
            maxItems: 100,
            description: 'Dry runs: each http_request takes the next answer, in order (nothing is called); one with none left takes `error`.',
          }),
        ),
      },
      { description: 'Dry runs only: what the customer, the approvers and the systems called do.' },
    ),
  ),
});
export type TriggerRunInput = Static<typeof TriggerRunBody>;

/** What `POST /v1/runs` answers: the run, and for a dry run (which has finished by then) its whole event log. */
export const TriggeredRunSchema = Type.Object({
  ...RunSchema.properties,
  events: Type.Optional(Type.Array(RunEventSchema, { description: 'Dry runs only: the whole event log.' })),
});

export const RunListQuery = ListQuery({
  automation_id: Type.Optional(Id('automation')),
  status: Type.Optional(Type.Enum(RUN_STATUSES)),
  conversation_id: Type.Optional(Id('conversation')),
  version: Type.Optional(Type.Integer({ ...VERSION_NUMBER_RANGE, description: 'With automation_id: runs of that version.' })),
});
export const RunListSchema = ListOf(RunSchema);

export const RunEventListQuery = Strict({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100 })),
  after_seq: Type.Optional(Type.Integer({ minimum: 0, maximum: INT32_MAX, description: 'Entries after this seq; 0 (the default) from the first.' })),
});
export const RunEventListSchema = ListOf(RunEventSchema);
