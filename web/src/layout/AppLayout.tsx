import { useQueryClient } from '@tanstack/react-query';
import { Link, Outlet, useNavigate } from '@tanstack/react-router';
import { ROLE_SCOPES } from '../../../src/modules/credentials/scopes.schemas.ts';
import type { Scope } from '../api/types.ts';
import { useSession, useSessionState } from '../auth/SessionContext.tsx';
import { LiveIndicator, LiveUpdates } from '../live/LiveUpdates.tsx';
import styles from './layout.module.css';

/** The signed-in frame: navigation, who is signed in (and as what), sign-out. */
export function AppLayout() {
  const state = useSessionState();
  const session = useSession();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const signOut = async () => {
    await session.signOut();
    queryClient.clear();
    await navigate({ to: '/sign-in' });
  };
  // The session just ended (here or in another tab): the guard is about to redirect to sign-in.
  if (state.status !== 'signed_in') return <Splash />;
  const { token } = state;
  // Pages a role may not read are not offered (the API refuses them anyway).
  const administer = token.member.role === 'owner' || token.member.role === 'admin';
  const can = (scope: Scope) => ROLE_SCOPES[token.member.role].includes(scope);
  return (
    <LiveUpdates>
      <div className={styles.shell}>
        <aside className={styles.sidebar}>
          <div className={styles.organization}>{token.organization.name}</div>
          <nav className={styles.nav} aria-label="Main">
            <Link to="/inbox">Inbox</Link>
            <Link to="/connections">Connections</Link>
            {can('templates:read') && <Link to="/templates">Templates</Link>}
            {can('notifications:read') && <Link to="/notifications">Notifications</Link>}
            {can('notifications:read') && <Link to="/schedules">Schedules</Link>}
            {can('automations:read') && <Link to="/automations">Automations</Link>}
            {administer && <Link to="/approvals">Approvals</Link>}
            {can('connectors:read') && <Link to="/connectors">Connector accounts</Link>}
            {can('usage:read') && <Link to="/usage">Usage</Link>}
            {administer && <Link to="/billing">Billing</Link>}
            <Link to="/members">Members</Link>
            {administer && <Link to="/developers">Developers</Link>}
          </nav>
          <div className={styles.me}>
            <LiveIndicator />
            <span>{token.member.name ?? token.member.email}</span>
            <span className={styles.role} data-testid="member-role">
              {token.member.role}
            </span>
            <button type="button" className={styles.signOut} onClick={() => void signOut()}>
              Sign out
            </button>
          </div>
        </aside>
        <main className={styles.main}>
          <Outlet />
        </main>
      </div>
    </LiveUpdates>
  );
}

export function Splash() {
  return (
    <div className={styles.splash} role="status">
      Loading…
    </div>
  );
}
