import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function WebhookEndpointPage() {
  return <AdminPage title="Webhook endpoint">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/developers/webhooks/$endpointId')({ component: WebhookEndpointPage });
