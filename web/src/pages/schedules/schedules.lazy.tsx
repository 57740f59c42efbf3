import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function SchedulesPage() {
  return <AdminPage title="Schedules">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/schedules')({ component: SchedulesPage });
