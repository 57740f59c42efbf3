/**
 * An automation's definition: its trigger, the run's options and the graph of steps a run walks.
 * Ajv checks the shape here (every field of every step type); the rules that need the whole graph or
 * a parser (ids unique, every `next` a step, reachability, the static loop guard, CEL) are in
 * definition/check-definition.ts, which answers JSON pointers into the same document.
 */
import Type, { type Static } from 'typebox';
import { Discriminated, Id, Strict } from '../../http/schemas.ts';
import { EVENT_TYPE_NAMES } from '../../events/event-types.schemas.ts';
import { InteractiveSchema } from '../messages/messages.schemas.ts';
import { TemplateParametersSchema } from '../templates/templates.schemas.ts';
import { ROLES } from '../credentials/scopes.schemas.ts';

export const MAX_STEPS = 100;
/** The definition as JSON text, in bytes. */
export const MAX_DEFINITION_BYTES = 256 * 1024;
export const DEFAULT_RUN_TIMEOUT_SECONDS = 7 * 24 * 3600;
export const MAX_RUN_TIMEOUT_SECONDS = 30 * 24 * 3600;

export const STEP_ID_PATTERN = '^[a-z0-9_]{1,64}$';
const StepId = Type.String({ pattern: STEP_ID_PATTERN, description: 'A step of this definition: lower-case letters, digits and underscores.' });
const Next = Type.Optional(StepId);

/** A CEL expression (https://cel.dev): no loops, no access to anything but the run's context; capped in cost. */
export const Expression = Type.String({ minLength: 1, maxLength: 4096, description: 'A CEL expression.' });
/** Text with `{{ expression }}` holes, each a CEL expression whose value is stringified (capped). */
export const TextWithHoles = Type.String({ minLength: 1, maxLength: 4096, description: 'Text with `{{ CEL }}` holes.' });
export const VARIABLE_NAME_PATTERN = '^[a-z_][a-z0-9_]{0,63}$';
const VariableName = Type.String({ pattern: VARIABLE_NAME_PATTERN, description: 'A run variable, read in expressions as `vars.<name>`.' });

export const TRIGGER_TYPES = ['message_received', 'conversation_created', 'event', 'api', 'schedule'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

export const TriggerSchema = Strict(
  {
    type: Type.Enum(TRIGGER_TYPES),
    event: Type.Optional(Type.Enum(EVENT_TYPE_NAMES, { description: 'The event type that starts a run; `event` triggers only, and required there.' })),
    filter: Type.Optional(Expression),
  },
  { description: 'What starts a run. `filter` (CEL over `trigger`, `message`, `contact`, `conversation`) must be true for the run to start.' },
);

const ErrorBranch = Type.Optional(StepId);

const MEDIA_TYPES = ['image', 'video', 'audio', 'document', 'sticker'] as const;

const SendMessageStep = Strict({
  id: StepId,
  type: Type.Literal('send_message'),
  text: Type.Optional(TextWithHoles),
  media: Type.Optional(
    Strict({
      type: Type.Enum(MEDIA_TYPES),
      media_id: Type.Optional(Id('media')),
      link: Type.Optional(Type.String({ pattern: '^https://', maxLength: 2048 })),
      caption: Type.Optional(TextWithHoles),
      filename: Type.Optional(Type.String({ minLength: 1, maxLength: 240 })),
    }),
  ),
  interactive: Type.Optional(InteractiveSchema),
  on_window_closed: Type.Optional(
    Type.String({ description: '`fail` (the default), `skip` (go on to `next`) or a step id to go to when the 24-hour window is closed.' }),
  ),
  next: Next,
  on_error: ErrorBranch,
});

const SendTemplateStep = Strict({
  id: StepId,
  type: Type.Literal('send_template'),
  template: Type.String({ pattern: '^[a-z0-9_]{1,512}$', description: 'The template name.' }),
  language: Type.String({ pattern: '^[a-z]{2,3}(_[A-Z]{2})?$' }),
  parameters: Type.Optional(TemplateParametersSchema),
  next: Next,
  on_error: ErrorBranch,
});

const WaitForReplyStep = Strict({
  id: StepId,
  type: Type.Literal('wait_for_reply'),
  timeout_seconds: Type.Integer({ minimum: 10, maximum: 604800 }),
  match: Type.Optional(Expression),
  save_as: Type.Optional(VariableName),
  branches: Type.Optional(Strict({ replied: Type.Optional(StepId), timeout: Type.Optional(StepId) })),
});

const ConditionStep = Strict({
  id: StepId,
  type: Type.Literal('condition'),
  branches: Type.Array(Strict({ when: Expression, next: StepId }), { minItems: 1, maxItems: 20 }),
  default: Type.Optional(StepId),
});

const SetVariableStep = Strict({ id: StepId, type: Type.Literal('set_variable'), name: VariableName, value: Expression, next: Next });

const Tag = Type.String({ minLength: 1, maxLength: 64 });
const SetTagsStep = Strict({
  id: StepId,
  type: Type.Literal('set_tags'),
  add: Type.Optional(Type.Array(Tag, { maxItems: 20 })),
  remove: Type.Optional(Type.Array(Tag, { maxItems: 20 })),
  next: Next,
  on_error: ErrorBranch,
});

const AssignStep = Strict({
  id: StepId,
  type: Type.Literal('assign'),
  member_id: Type.Union([Id('member'), Type.Null()], { description: 'The member to assign; null unassigns.' }),
  next: Next,
  on_error: ErrorBranch,
});

const HandoffStep = Strict({
  id: StepId,
  type: Type.Literal('handoff'),
  assign_to: Type.Optional(Id('member')),
  note: Type.Optional(TextWithHoles),
});

const HttpRequestStep = Strict({
  id: StepId,
  type: Type.Literal('http_request'),
  connector_account_id: Id('connectorAccount'),
  method: Type.Enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const),
  path: TextWithHoles,
  query: Type.Optional(Type.Record(Type.String({ maxLength: 128 }), TextWithHoles, { maxProperties: 50 })),
  body: Type.Optional(Expression),
  timeout_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 10000 })),
  save_as: Type.Optional(VariableName),
  branches: Type.Optional(Strict({ ok: Type.Optional(StepId), error: Type.Optional(StepId) })),
});

const RequestApprovalStep = Strict({
  id: StepId,
  type: Type.Literal('request_approval'),
  title: TextWithHoles,
  summary: Type.Optional(TextWithHoles),
  action_step: StepId,
  approvers: Strict({
    roles: Type.Optional(Type.Array(Type.Enum(ROLES), { maxItems: 4 })),
    member_ids: Type.Optional(Type.Array(Id('member'), { maxItems: 50 })),
    allow_api_keys: Type.Optional(Type.Boolean()),
  }),
  expires_in_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 7 * 24 * 3600 })),
  branches: Type.Optional(Strict({ approved: Type.Optional(StepId), rejected: Type.Optional(StepId), expired: Type.Optional(StepId) })),
});

const DelayStep = Strict({
  id: StepId,
  type: Type.Literal('delay'),
  seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 30 * 24 * 3600 })),
  until: Type.Optional(Expression),
  until_local: Type.Optional(
    Strict({
      time: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: '`HH:MM`, 24-hour.' }),
      timezone: Type.String({ minLength: 1, maxLength: 64, description: 'An IANA time zone (`Europe/Berlin`).' }),
    }),
  ),
  next: Next,
});

const EndStep = Strict({
  id: StepId,
  type: Type.Literal('end'),
  outcome: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
});

export const STEP_SCHEMAS = {
  send_message: SendMessageStep,
  send_template: SendTemplateStep,
  wait_for_reply: WaitForReplyStep,
  condition: ConditionStep,
  set_variable: SetVariableStep,
  set_tags: SetTagsStep,
  assign: AssignStep,
  handoff: HandoffStep,
  http_request: HttpRequestStep,
  request_approval: RequestApprovalStep,
  delay: DelayStep,
  end: EndStep,
};
export type StepType = keyof typeof STEP_SCHEMAS;
export const STEP_TYPES = Object.keys(STEP_SCHEMAS) as StepType[];
/** The steps an approval may gate (`action_step`): those that act on the conversation, the customer or another system. */
export const ACTION_STEP_TYPES: readonly StepType[] = ['send_message', 'send_template', 'set_tags', 'assign', 'handoff', 'http_request'];
/** The steps a run stops at, so that a cycle through one of them cannot spin (the static loop guard). */
export const WAITING_STEP_TYPES: readonly StepType[] = ['wait_for_reply', 'delay', 'request_approval'];

export const StepSchema = Discriminated('type', STEP_SCHEMAS, { description: 'One step; `type` says which fields it has.' });
export type Step = Static<typeof StepSchema>;
export type StepOf<T extends StepType> = Static<(typeof STEP_SCHEMAS)[T]>;

export const CLAIM_CONTROL = ['if_api', 'never'] as const;

export const DefinitionSchema = Strict(
  {
    trigger: TriggerSchema,
    claim_control: Type.Optional(
      Type.Enum(CLAIM_CONTROL, {
        default: 'if_api',
        description: '`if_api`: a run takes a conversation whose control is `api`; `never`: only one already under `automation` control.',
      }),
    ),
    input_schema: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'A JSON Schema the `input` of `POST /v1/runs` must satisfy (api triggers).' }),
    ),
    timeout_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: MAX_RUN_TIMEOUT_SECONDS, default: DEFAULT_RUN_TIMEOUT_SECONDS })),
    start: StepId,
    steps: Type.Array(StepSchema, { minItems: 1, maxItems: MAX_STEPS }),
  },
  { description: 'The trigger, the run options and the steps (see docs/automations.md).' },
);
export type Definition = Static<typeof DefinitionSchema>;
