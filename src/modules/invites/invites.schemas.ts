import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { Email, NewPassword } from '../auth/auth.schemas.ts';

export const INVITE_STATUSES = ['pending', 'accepted', 'revoked', 'expired'] as const;
export type InviteStatus = (typeof INVITE_STATUSES)[number];

/** Ownership is never given by invite: it moves only by transfer. */
export const INVITE_ROLES = ['admin', 'agent', 'viewer'] as const;
export type InviteRole = (typeof INVITE_ROLES)[number];

export const InviteSchema = Type.Object(
  {
    id: Id('invite'),
    object: Type.Literal('invite'),
    organization_id: Id('organization'),
    email: Type.String({ description: 'The invited address, trimmed and lower-cased.' }),
    role: Type.Enum(INVITE_ROLES),
    status: Type.Enum(INVITE_STATUSES, {
      description: '`expired` is a pending invite past `expires_at` (or one a newer invite to the same email replaced).',
    }),
    invited_by: Id('member', 'The member who created the invite.'),
    member_id: Nullable(Id('member', 'Once accepted: the member it made.')),
    expires_at: Timestamp,
    last_sent_at: Timestamp,
    accepted_at: Nullable(Timestamp),
    revoked_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { description: 'An invitation to join the organization, mailed as a link into the dashboard. The token is never returned.' },
);
export type Invite = Static<typeof InviteSchema>;

export const CreateInviteBody = Strict({
  email: Email,
  role: Type.Enum(INVITE_ROLES, { description: 'Only a role below your own: an owner invites admins, agents and viewers; an admin, agents and viewers.' }),
});
export type CreateInviteInput = Static<typeof CreateInviteBody>;

export const AcceptInviteBody = Strict({
  token: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', description: 'The token of the invite link (after `#token=`).' }),
  password: Type.Optional(
    Type.With(NewPassword, { description: 'Required when the invited email has no account yet (10 to 200 characters); refused when it has one.' }),
  ),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'For a new account only.' })),
});
export type AcceptInviteInput = Static<typeof AcceptInviteBody>;

export const InviteListQuery = ListQuery({ status: Type.Optional(Type.Enum(INVITE_STATUSES)) });
export const InviteListSchema = ListOf(InviteSchema);
