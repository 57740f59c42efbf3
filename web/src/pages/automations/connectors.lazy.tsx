import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function ConnectorAccountsPage() {
  return <AdminPage title="Connector accounts">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/connectors')({ component: ConnectorAccountsPage });
