import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function RunPage() {
  return <AdminPage title="Run">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/runs/$runId')({ component: RunPage });
