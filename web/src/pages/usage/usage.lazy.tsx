import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function UsagePage() {
  return <AdminPage title="Usage">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/usage')({ component: UsagePage });
