import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function BillingPage() {
  return <AdminPage title="Billing">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/billing')({ component: BillingPage });
