import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function ApiKeysPage() {
  return <AdminPage title="API keys">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/developers/api-keys')({ component: ApiKeysPage });
