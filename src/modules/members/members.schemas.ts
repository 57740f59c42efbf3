import Type, { type Static } from 'typebox';
import { ROLES } from '../credentials/scopes.schemas.ts';
import { Id, ListOf, ListQuery, Nullable, Timestamp } from '../../http/schemas.ts';

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
