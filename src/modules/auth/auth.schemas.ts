import Type, { type Static } from 'typebox';
import { Id, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { MemberSchema } from '../members/members.schemas.ts';
import { OrganizationName, OrganizationSchema } from '../organizations/organizations.schemas.ts';

export const Email = Type.String({ format: 'email', maxLength: 254 });
// Length is what makes a password strong; 10 is NIST's floor raised a little, 200 bounds hashing work.
export const NewPassword = Type.String({ minLength: 10, maxLength: 200 });

export const SignupBody = Strict({
  email: Email,
  password: NewPassword,
  organization_name: OrganizationName,
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
});
export type SignupInput = Static<typeof SignupBody>;

export const LoginBody = Strict({
  email: Email,
  password: Type.String({ minLength: 1, maxLength: 200 }),
  organization_id: Type.Optional(Id('organization', 'For a person in several organizations: which one to open. Default: the first they joined.')),
});
export type LoginInput = Static<typeof LoginBody>;

export const DashboardTokenSchema = Type.Object({
  object: Type.Literal('dashboard_token'),
  token: Type.String({ description: 'The bearer credential, valid 15 minutes. Renew it with POST /auth/refresh.' }),
  expires_at: Timestamp,
  organization: OrganizationSchema,
  member: MemberSchema,
});
export type DashboardToken = Static<typeof DashboardTokenSchema>;

export const LogoutResponse = Type.Object({ object: Type.Literal('session'), revoked: Type.Boolean(), session_id: Nullable(Type.String()) });
