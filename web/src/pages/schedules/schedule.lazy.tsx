import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function SchedulePage() {
  return <AdminPage title="Schedule">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/schedules/$scheduleId')({ component: SchedulePage });
