import { createContext, use, useSyncExternalStore, type ReactNode } from 'react';
import type { ApiClient } from '../api/client.ts';
import type { DashboardToken, Role, Scope } from '../api/types.ts';
import { ROLE_SCOPES } from '../../../src/modules/credentials/scopes.schemas.ts';
import type { Session, SessionState } from './session.ts';

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ session, children }: { session: Session; children: ReactNode }) {
  return <SessionContext value={session}>{children}</SessionContext>;
}

export function useSession(): Session {
  const session = use(SessionContext);
  if (!session) throw new Error('useSession outside SessionProvider');
  return session;
}

export function useSessionState(): SessionState {
  const session = useSession();
  return useSyncExternalStore(session.subscribe, () => session.state);
}

export function useApi(): ApiClient {
  return useSession().api;
}

/** The signed-in member's token; only inside the signed-in part of the app. */
export function useSignedIn(): DashboardToken {
  const state = useSessionState();
  if (state.status !== 'signed_in') throw new Error('useSignedIn outside the signed-in layout');
  return state.token;
}

/**
 * What the member's role lets the UI offer. The API refuses the rest anyway (ROLE_SCOPES on the
 * server); the dashboard only avoids showing controls that would be refused.
 */
export interface Permissions {
  role: Role;
  /** Reply, react, note, tag, assign, lock: agents and above. */
  converse: boolean;
  /** Connect numbers and change settings: owners and admins. */
  administer: boolean;
  /** Whether the role holds a scope (the server's own table, ROLE_SCOPES): what a page may read or change. */
  can(scope: Scope): boolean;
}

export function usePermissions(): Permissions {
  const role = useSignedIn().member.role;
  return { role, converse: role !== 'viewer', administer: role === 'owner' || role === 'admin', can: (scope) => ROLE_SCOPES[role].includes(scope) };
}
