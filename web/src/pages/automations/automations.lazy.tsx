import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function AutomationsPage() {
  return <AdminPage title="Automations">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/automations')({ component: AutomationsPage });
