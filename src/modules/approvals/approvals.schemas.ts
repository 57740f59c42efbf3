import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { ROLES } from '../credentials/scopes.schemas.ts';

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'canceled'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];
/** How a pending approval ends by a person's decision or by its deadline (a cancel is the run's). */
export const APPROVAL_DECISIONS = ['approved', 'rejected', 'expired'] as const;
export type ApprovalDecision = (typeof APPROVAL_DECISIONS)[number];

export const ApproversSchema = Type.Object({
  roles: Type.Array(Type.Enum(ROLES), { description: 'Members with one of these roles may decide (deciding needs `runs:write`: owners and admins).' }),
  member_ids: Type.Array(Id('member'), { description: 'These members may decide.' }),
  allow_api_keys: Type.Boolean({ description: 'Whether API keys (and OAuth tokens, which act for no member) may decide.' }),
});
export type Approvers = Static<typeof ApproversSchema>;

export const ApprovalSchema = Type.Object({
  id: Id('approval'),
  object: Type.Literal('approval'),
  run_id: Id('run'),
  automation_id: Id('automation'),
  step_id: Type.String({ description: 'The `request_approval` step that asked.' }),
  status: Type.Enum(APPROVAL_STATUSES),
  title: Type.String(),
  summary: Nullable(Type.String()),
  action: Type.Record(Type.String(), Type.Unknown(), {
    description: 'The action step as rendered when the approval was requested: `{step_id, type, ...}`. Approving runs exactly this, never a re-render.',
  }),
  approvers: ApproversSchema,
  requested_at: Timestamp,
  expires_at: Timestamp,
  decided_at: Nullable(Timestamp, { description: 'When it was approved, rejected, expired or canceled.' }),
  decided_by: Nullable(
    Type.Object({
      member_id: Nullable(Id('member')),
      key_id: Nullable(Type.String({ description: 'The API key (`key_`) or OAuth token (`otk_`) that decided.' })),
    }),
    { description: 'Who approved or rejected it; null while pending, and after an expiry or a cancel.' },
  ),
  comment: Nullable(Type.String()),
});
export type Approval = Static<typeof ApprovalSchema>;

export const DecideBody = Strict({
  comment: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: 'Why; kept on the approval.' })),
});
export type DecideInput = Static<typeof DecideBody>;

export const ApprovalListQuery = ListQuery({
  status: Type.Optional(Type.Enum(APPROVAL_STATUSES)),
  automation_id: Type.Optional(Id('automation')),
  run_id: Type.Optional(Id('run')),
});
export const ApprovalListSchema = ListOf(ApprovalSchema);
