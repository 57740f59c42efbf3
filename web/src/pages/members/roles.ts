import { outranks, ROLES, type Role } from '../../../../src/modules/credentials/scopes.schemas.ts';

/** What each role may do, in the words the members page and the invite form use. */
export const ROLE_DESCRIPTIONS: Record<Role, string> = {
  owner: 'The owner can do everything, including billing and handing the organization over.',
  admin: 'Admins manage numbers, settings, billing, and the members and invites below admin.',
  agent: 'Agents answer customers in the inbox.',
  viewer: 'Viewers read the inbox and settings, and change nothing.',
};

/** The roles `role` may grant (by invite or role change): those below its own, never owner (docs/members.md#roles). */
export function grantableBy(role: Role): Role[] {
  return ROLES.filter((candidate) => candidate !== 'owner' && outranks(role, candidate));
}

/** Whether `role` may change or remove a member (or an invite) of `other`'s role: only those below it. */
export const manages = (role: Role, other: Role) => outranks(role, other);

export const article = (role: Role) => (role === 'admin' || role === 'agent' ? 'an' : 'a');
