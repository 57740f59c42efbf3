import type { QueryClient } from '@tanstack/react-query';
import { createRootRouteWithContext, createRoute, createRouter, Outlet, redirect } from '@tanstack/react-router';
import type { Session } from './auth/session.ts';
import { AppLayout } from './layout/AppLayout.tsx';
import { SignInPage } from './pages/auth/SignInPage.tsx';
import { SignUpPage } from './pages/auth/SignUpPage.tsx';
import { ConnectionsPage } from './pages/connections/ConnectionsPage.tsx';
import { parseAuditLogSearch } from './pages/developers/search.ts';
import { ConversationPane, InboxLayout, NoConversationSelected, parseInboxSearch } from './pages/inbox/routes.tsx';
import { ErrorMessage } from './ui/controls.tsx';

export interface RouterContext {
  session: Session;
  queryClient: QueryClient;
}

const rootRoute = createRootRouteWithContext<RouterContext>()({
  component: Outlet,
  errorComponent: ({ error }) => <ErrorMessage error={error} />,
});

/** Only a relative path inside the dashboard: an open redirect must not be built from a query string. */
function safeRedirect(value: unknown): string | undefined {
  return typeof value === 'string' && value.startsWith('/') && !value.startsWith('//') ? value : undefined;
}

const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/sign-in',
  validateSearch: (search: Record<string, unknown>): { redirect?: string } => {
    const target = safeRedirect(search.redirect);
    return target ? { redirect: target } : {};
  },
  component: function SignIn() {
    return <SignInPage redirect={signInRoute.useSearch().redirect} />;
  },
});

const signUpRoute = createRoute({ getParentRoute: () => rootRoute, path: '/sign-up', component: SignUpPage });

/** Everything behind a session: waits for the refresh cookie's verdict, else goes to sign-in and back. */
const appRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: 'app',
  beforeLoad: async ({ context, location }) => {
    await context.session.ready;
    if (context.session.state.status !== 'signed_in') {
      throw redirect({ to: '/sign-in', search: { redirect: location.href } });
    }
  },
  component: AppLayout,
});

const homeRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/',
  beforeLoad: () => {
    throw redirect({ to: '/inbox' });
  },
});

export const inboxRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/inbox',
  validateSearch: parseInboxSearch,
  component: InboxLayout,
});

const inboxIndexRoute = createRoute({ getParentRoute: () => inboxRoute, path: '/', component: NoConversationSelected });

export const conversationRoute = createRoute({
  getParentRoute: () => inboxRoute,
  path: '$conversationId',
  component: function Conversation() {
    return <ConversationPane conversationId={conversationRoute.useParams().conversationId} />;
  },
});

const connectionsRoute = createRoute({ getParentRoute: () => appRoute, path: '/connections', component: ConnectionsPage });
const connectionRoute = createRoute({ getParentRoute: () => appRoute, path: '/connections/$connectionId' }).lazy(() =>
  import('./pages/connections/connection.lazy.tsx').then((page) => page.Route),
);

// The settings pages, each loaded when first visited so the inbox's bundle never grows with them.
const apiKeysRoute = createRoute({ getParentRoute: () => appRoute, path: '/developers/api-keys' }).lazy(() =>
  import('./pages/developers/api-keys.lazy.tsx').then((page) => page.Route),
);
const webhooksRoute = createRoute({ getParentRoute: () => appRoute, path: '/developers/webhooks' }).lazy(() =>
  import('./pages/developers/webhooks.lazy.tsx').then((page) => page.Route),
);
const webhookEndpointRoute = createRoute({ getParentRoute: () => appRoute, path: '/developers/webhooks/$endpointId' }).lazy(() =>
  import('./pages/developers/webhook-endpoint.lazy.tsx').then((page) => page.Route),
);
const auditLogRoute = createRoute({ getParentRoute: () => appRoute, path: '/developers/audit-log', validateSearch: parseAuditLogSearch }).lazy(() =>
  import('./pages/developers/audit-log.lazy.tsx').then((page) => page.Route),
);
const authorizedAppsRoute = createRoute({ getParentRoute: () => appRoute, path: '/developers/apps' }).lazy(() =>
  import('./pages/developers/apps.lazy.tsx').then((page) => page.Route),
);
const templatesRoute = createRoute({ getParentRoute: () => appRoute, path: '/templates' }).lazy(() =>
  import('./pages/templates/templates.lazy.tsx').then((page) => page.Route),
);
const notificationsRoute = createRoute({ getParentRoute: () => appRoute, path: '/notifications' }).lazy(() =>
  import('./pages/notifications/notifications.lazy.tsx').then((page) => page.Route),
);
const notificationRoute = createRoute({ getParentRoute: () => appRoute, path: '/notifications/$notificationId' }).lazy(() =>
  import('./pages/notifications/notification.lazy.tsx').then((page) => page.Route),
);
const notificationBatchRoute = createRoute({ getParentRoute: () => appRoute, path: '/notifications/batches/$batchId' }).lazy(() =>
  import('./pages/notifications/batch.lazy.tsx').then((page) => page.Route),
);
const schedulesRoute = createRoute({ getParentRoute: () => appRoute, path: '/schedules' }).lazy(() =>
  import('./pages/schedules/schedules.lazy.tsx').then((page) => page.Route),
);
const scheduleRoute = createRoute({ getParentRoute: () => appRoute, path: '/schedules/$scheduleId' }).lazy(() =>
  import('./pages/schedules/schedule.lazy.tsx').then((page) => page.Route),
);
const automationsRoute = createRoute({ getParentRoute: () => appRoute, path: '/automations' }).lazy(() =>
  import('./pages/automations/automations.lazy.tsx').then((page) => page.Route),
);
const automationRoute = createRoute({ getParentRoute: () => appRoute, path: '/automations/$automationId' }).lazy(() =>
  import('./pages/automations/automation.lazy.tsx').then((page) => page.Route),
);
const runRoute = createRoute({ getParentRoute: () => appRoute, path: '/runs/$runId' }).lazy(() =>
  import('./pages/automations/run.lazy.tsx').then((page) => page.Route),
);
const approvalsRoute = createRoute({ getParentRoute: () => appRoute, path: '/approvals' }).lazy(() =>
  import('./pages/automations/approvals.lazy.tsx').then((page) => page.Route),
);
const connectorsRoute = createRoute({ getParentRoute: () => appRoute, path: '/connectors' }).lazy(() =>
  import('./pages/automations/connectors.lazy.tsx').then((page) => page.Route),
);
const usageRoute = createRoute({ getParentRoute: () => appRoute, path: '/usage' }).lazy(() =>
  import('./pages/usage/usage.lazy.tsx').then((page) => page.Route),
);
const billingRoute = createRoute({ getParentRoute: () => appRoute, path: '/billing' }).lazy(() =>
  import('./pages/billing/billing.lazy.tsx').then((page) => page.Route),
);
const membersRoute = createRoute({ getParentRoute: () => appRoute, path: '/members' }).lazy(() =>
  import('./pages/members/members.lazy.tsx').then((page) => page.Route),
);
/** The Developers section's own address: its first tab (the link stays highlighted on every tab). */
const developersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: '/developers',
  beforeLoad: () => {
    throw redirect({ to: '/developers/api-keys' });
  },
});
const settingsRoutes = [
  developersRoute,
  connectionRoute,
  apiKeysRoute,
  webhooksRoute,
  webhookEndpointRoute,
  auditLogRoute,
  authorizedAppsRoute,
  templatesRoute,
  notificationsRoute,
  notificationRoute,
  notificationBatchRoute,
  schedulesRoute,
  scheduleRoute,
  automationsRoute,
  automationRoute,
  runRoute,
  approvalsRoute,
  connectorsRoute,
  usageRoute,
  billingRoute,
  membersRoute,
];

/** An invitation's link: outside the signed-in part, since the invitee may have no account yet. */
const acceptInviteRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/accept-invite',
  validateSearch: (search: Record<string, unknown>): { token?: string } => (typeof search.token === 'string' ? { token: search.token } : {}),
}).lazy(() => import('./pages/members/accept-invite.lazy.tsx').then((page) => page.Route));

const routeTree = rootRoute.addChildren([
  signInRoute,
  signUpRoute,
  acceptInviteRoute,
  appRoute.addChildren([homeRoute, inboxRoute.addChildren([inboxIndexRoute, conversationRoute]), connectionsRoute, ...settingsRoutes]),
]);

export function createDashboardRouter(context: RouterContext) {
  return createRouter({ routeTree, basepath: '/dashboard', context, defaultPreload: 'intent', scrollRestoration: false });
}

declare module '@tanstack/react-router' {
  interface Register {
    router: ReturnType<typeof createDashboardRouter>;
  }
}
