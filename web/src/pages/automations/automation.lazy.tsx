import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function AutomationPage() {
  return <AdminPage title="Automation">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/automations/$automationId')({ component: AutomationPage });
