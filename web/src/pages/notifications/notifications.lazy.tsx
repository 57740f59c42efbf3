import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function NotificationsPage() {
  return <AdminPage title="Notifications">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/notifications')({ component: NotificationsPage });
