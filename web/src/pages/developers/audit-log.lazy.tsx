import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function AuditLogPage() {
  return <AdminPage title="Audit log">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/developers/audit-log')({ component: AuditLogPage });
