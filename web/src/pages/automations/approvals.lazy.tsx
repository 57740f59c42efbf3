import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function ApprovalsPage() {
  return <AdminPage title="Approvals">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/approvals')({ component: ApprovalsPage });
