import { createLazyRoute } from '@tanstack/react-router';
import { AdminPage } from '../../ui/admin.tsx';

function TemplatesPage() {
  return <AdminPage title="Templates">{null}</AdminPage>;
}

export const Route = createLazyRoute('/app/templates')({ component: TemplatesPage });
