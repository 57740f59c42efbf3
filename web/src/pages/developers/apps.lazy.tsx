import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function AuthorizedAppsPage() {
  return <AdminPage title="Authorized apps">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/developers/apps')({ component: AuthorizedAppsPage });
