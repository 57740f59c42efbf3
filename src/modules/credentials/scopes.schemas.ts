/**
 * The scope catalogue and the defaults each kind of credential gets. Scopes come in read/write pairs
 * per resource family; `write` does not imply `read`, so a key can be made to send but not to read.
 */
const PAIRED = ['messages', 'contacts', 'templates', 'notifications', 'automations', 'runs', 'connections', 'connectors', 'webhooks'] as const;

export const SCOPES = [...PAIRED.flatMap((family) => [`${family}:read`, `${family}:write`] as const), 'usage:read', 'runtime:proxy', 'keys:write'] as const;

export type Scope = (typeof SCOPES)[number];

export const ROLES = ['owner', 'admin', 'agent', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The hierarchy owner > admin > agent > viewer (ROLES is in that order): a member manages only
 * members and invites below them, and grants only roles below their own.
 */
export function outranks(role: Role, other: Role): boolean {
  return ROLES.indexOf(role) < ROLES.indexOf(other);
}

export const CREDENTIAL_KINDS = ['connection_key', 'organization_key', 'oauth_token', 'dashboard_token'] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

export const MODES = ['live', 'test'] as const;
export type Mode = (typeof MODES)[number];

const READ_SCOPES = SCOPES.filter((scope) => scope.endsWith(':read'));

/** What a dashboard token may do, by its member's role. */
export const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  owner: SCOPES,
  admin: SCOPES,
  agent: ['messages:read', 'messages:write', 'contacts:read', 'contacts:write', 'templates:read'],
  viewer: READ_SCOPES,
};

/** What a connection key holds unless narrowed at creation; it can never hold more. */
export const CONNECTION_KEY_SCOPES: readonly Scope[] = [
  'messages:read',
  'messages:write',
  'contacts:read',
  'contacts:write',
  'templates:read',
  'templates:write',
  'notifications:read',
  'notifications:write',
  'webhooks:read',
  'webhooks:write',
  'connections:read',
  'usage:read',
  'runtime:proxy',
];

/**
 * An organization key's default: everything except key management (asked for explicitly) and the
 * runtime surface (which organization keys may not use at all).
 */
export const ORGANIZATION_KEY_DEFAULT_SCOPES: readonly Scope[] = SCOPES.filter((scope) => scope !== 'keys:write' && scope !== 'runtime:proxy');
export const ORGANIZATION_KEY_ALLOWED_SCOPES: readonly Scope[] = SCOPES.filter((scope) => scope !== 'runtime:proxy');

/** Key management happens only in the dashboard, never through a third-party OAuth grant. */
export const OAUTH_FORBIDDEN_SCOPES: readonly Scope[] = ['keys:write'];
