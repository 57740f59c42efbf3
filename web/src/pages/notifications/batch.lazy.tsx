import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function NotificationBatchPage() {
  return <AdminPage title="Notification batch">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/notifications/batches/$batchId')({ component: NotificationBatchPage });
