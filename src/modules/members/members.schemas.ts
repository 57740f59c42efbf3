import Type, { type Static } from 'typebox';
import { ROLES } from '../credentials/scopes.schemas.ts';
import { Id, ListOf, ListQuery, Nullable, Strict, Timestamp } from '../../http/schemas.ts';

export const RoleSchema = Type.Enum(ROLES);

export const MemberSchema = Type.Object({
  id: Id('member'),
  object: Type.Literal('member'),
  organization_id: Id('organization'),
  email: Type.String(),
  name: Nullable(Type.String()),
  role: RoleSchema,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Member = Static<typeof MemberSchema>;

export const MemberListQuery = ListQuery({ role: Type.Optional(RoleSchema) });
export const MemberListSchema = ListOf(MemberSchema);

/** Every role but owner, which moves only by a transfer. */
export const GrantableRoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('agent'), Type.Literal('viewer')], {
  description: 'admin, agent or viewer; below the role of whoever grants it. The owner changes only by a transfer.',
});

export const UpdateMemberBody = Strict({ role: GrantableRoleSchema });

export const TransferOwnershipBody = Strict({
  member_id: Id('member', 'The member who becomes the owner; you become an admin.'),
  password: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Your password; required unless you signed in within the last 10 minutes.' }),
  ),
});
