import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function WebhooksPage() {
  return <AdminPage title="Webhooks">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/developers/webhooks')({ component: WebhooksPage });
