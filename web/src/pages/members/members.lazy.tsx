import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function MembersPage() {
  return <AdminPage title="Members">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/members')({ component: MembersPage });
