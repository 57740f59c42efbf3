import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Metadata, MetadataPatch, Nullable, Strict, StoredJsonOf, Timestamp } from '../../http/schemas.ts';
import { INT32_MAX } from '../../lib/integers.ts';
import { MODES } from '../credentials/scopes.schemas.ts';
import { DefinitionSchema, TRIGGER_TYPES } from './definition.schemas.ts';

export const AUTOMATION_STATUSES = ['draft', 'enabled', 'disabled'] as const;
export type AutomationStatus = (typeof AUTOMATION_STATUSES)[number];

export const DISABLED_REASONS = ['user', 'consecutive_failures'] as const;
export type DisabledReason = (typeof DISABLED_REASONS)[number];

/** Disabling settles runs in flight by keeping or canceling them: there is no version to migrate them to. */
export const DISABLE_POLICIES = ['keep', 'cancel'] as const;

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Description = Type.String({ maxLength: 2000 });
const VersionMessage = Type.String({ minLength: 1, maxLength: 500, description: 'What changed, in your words (as a commit message).' });
/** A version number's range: a version is stored in an `integer` column. */
export const VERSION_NUMBER_RANGE = { minimum: 1, maximum: INT32_MAX } as const;
const VersionNumber = Type.Integer(VERSION_NUMBER_RANGE);
const InFlight = Type.Enum(['keep', 'cancel', 'migrate'] as const, {
  default: 'keep',
  description:
    'What happens to runs in flight: `keep` (default) lets them finish on the version they started on; `cancel` ends them `canceled`; `migrate` moves waiting and paused runs whose current step exists with the same type in the new version onto it (the others are kept).',
});

export const AutomationSchema = Type.Object({
  id: Id('automation'),
  object: Type.Literal('automation'),
  name: Type.String(),
  description: Nullable(Type.String()),
  mode: Type.Enum(MODES, { description: 'The connections it runs on: `live` or `test` ones.' }),
  connection_id: Nullable(Id('connection'), { description: 'The one connection it runs on; null: every connection of its mode.' }),
  status: Type.Enum(AUTOMATION_STATUSES, {
    description: '`draft` until first enabled; `enabled` (its deployed version starts runs); `disabled` (by a request, or after 10 failed runs in a row).',
  }),
  disabled_reason: Nullable(Type.Enum(DISABLED_REASONS), { description: 'Why it is disabled: `user` or `consecutive_failures`; null unless disabled.' }),
  trigger: Nullable(
    Type.Object({
      type: Type.Enum(TRIGGER_TYPES),
      event: Nullable(Type.String({ description: 'The event type, for `event` triggers.' })),
    }),
    { description: 'What starts a run of the deployed version (its `filter` is in the version’s definition); null until a version is deployed.' },
  ),
  deployed_version: Nullable(Type.Integer(), { description: 'The version new runs start on.' }),
  previous_deployed_version: Nullable(Type.Integer(), { description: 'The version deployed before it: what `rollback` redeploys.' }),
  latest_version: Type.Integer({ description: 'The newest version’s number; 0 before the first. Send it as `based_on_version` when writing the next.' }),
  consecutive_failures: Type.Integer({
    description: 'Live runs failed or timed out since the last success, deploy or enable; at 10 the automation is disabled.',
  }),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Automation = Static<typeof AutomationSchema>;

export const AutomationVersionSchema = Type.Object({
  id: Id('automationVersion'),
  object: Type.Literal('automation_version'),
  automation_id: Id('automation'),
  number: Type.Integer({ description: '1, 2, ... per automation.' }),
  // Returned as stored: versions never change, and the steps' union (told apart by `if`/`then`) is
  // not one fast-json-stringify can serialize.
  definition: StoredJsonOf(DefinitionSchema),
  message: Nullable(Type.String()),
  created_by: Type.String({ description: 'The member (`mem_`) or the credential (`key_`, `otk_`) that wrote it.' }),
  warnings: Type.Array(Type.String(), {
    description: 'What would refuse a deploy of this version as it was written (a template not approved), each naming its pointer.',
  }),
  created_at: Timestamp,
});
export type AutomationVersion = Static<typeof AutomationVersionSchema>;

export const CreateAutomationBody = Strict({
  name: Name,
  description: Type.Optional(Description),
  connection_id: Type.Optional(Id('connection', 'Runs only on this connection; without it, on every connection of its mode. Its mode is the connection’s.')),
  mode: Type.Optional(Type.Enum(MODES, { description: 'Dashboard and OAuth tokens only (an API key’s automations have the key’s mode); default `live`.' })),
  definition: Type.Optional(DefinitionSchema),
  message: Type.Optional(VersionMessage),
  metadata: Type.Optional(Metadata),
});
export type CreateAutomationInput = Static<typeof CreateAutomationBody>;

export const UpdateAutomationBody = Strict({
  name: Type.Optional(Name),
  description: Type.Optional(Nullable(Description)),
  metadata: Type.Optional(MetadataPatch),
});
export type UpdateAutomationInput = Static<typeof UpdateAutomationBody>;

export const CreateVersionBody = Strict({
  definition: DefinitionSchema,
  message: Type.Optional(VersionMessage),
  based_on_version: Type.Integer({
    minimum: 0,
    maximum: INT32_MAX,
    description: 'The `latest_version` you read (0 for the first): another version written since is a conflict, so no edit is lost.',
  }),
});
export type CreateVersionInput = Static<typeof CreateVersionBody>;

export const DeployBody = Strict({ version: VersionNumber, in_flight: Type.Optional(InFlight) });
export type DeployInput = Static<typeof DeployBody>;

export const RollbackBody = Strict({ in_flight: Type.Optional(InFlight) });
export type RollbackInput = Static<typeof RollbackBody>;

export const DisableBody = Strict({
  in_flight: Type.Optional(
    Type.Enum(DISABLE_POLICIES, { default: 'keep', description: '`keep` (default) lets runs in flight finish; `cancel` ends them `canceled`.' }),
  ),
});
export type DisableInput = Static<typeof DisableBody>;

export const DeleteAutomationQuery = Strict({
  cancel_runs: Type.Optional(Type.Boolean({ description: 'Cancel the automation’s active runs; without it, a delete with active runs is refused.' })),
});

export const InFlightCountsSchema = Type.Object({ kept: Type.Integer(), canceled: Type.Integer(), migrated: Type.Integer() });

export const DeploymentSchema = Type.Object({
  object: Type.Literal('automation_deployment'),
  automation: AutomationSchema,
  version: Type.Integer({ description: 'The version now deployed.' }),
  in_flight: InFlightCountsSchema,
});
export type Deployment = Static<typeof DeploymentSchema>;

export const AutomationPath = Strict({ id: Id('automation') });
export const VersionPath = Strict({ id: Id('automation'), number: VersionNumber });

export const AutomationListQuery = ListQuery({
  status: Type.Optional(Type.Enum(AUTOMATION_STATUSES)),
  connection_id: Type.Optional(Id('connection')),
});
export const AutomationListSchema = ListOf(AutomationSchema);
export const VersionListQuery = ListQuery();
export const VersionListSchema = ListOf(AutomationVersionSchema);
