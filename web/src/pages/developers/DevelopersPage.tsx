import { Link } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage } from '../../ui/admin.tsx';
import styles from './developers.module.css';

/**
 * The frame of the Developers pages: the page's title and the tab bar between them. A tab the role
 * cannot read is not offered; a page visited anyway shows the API's refusal.
 */
export function DevelopersPage({
  title,
  description,
  actions,
  children,
}: {
  title: string;
  description?: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
}) {
  const { administer, can } = usePermissions();
  return (
    <AdminPage title={title} description={description} actions={actions}>
      <nav aria-label="Developers" className={styles.tabs}>
        {administer && <Link to="/developers/api-keys">API keys</Link>}
        {can('webhooks:read') && <Link to="/developers/webhooks">Webhooks</Link>}
        {administer && <Link to="/developers/audit-log">Audit log</Link>}
        <Link to="/developers/apps">Authorized apps</Link>
      </nav>
      {children}
    </AdminPage>
  );
}
