import type { QueryClient } from '@tanstack/react-query';
import { createRootRouteWithContext, createRoute, createRouter, Outlet, redirect } from '@tanstack/react-router';
import type { Session } from './auth/session.ts';
import { AppLayout } from './layout/AppLayout.tsx';
import { SignInPage } from './pages/auth/SignInPage.tsx';
import { SignUpPage } from './pages/auth/SignUpPage.tsx';
import { ConnectionsPage } from './pages/connections/ConnectionsPage.tsx';
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

const routeTree = rootRoute.addChildren([
  signInRoute,
  signUpRoute,
  appRoute.addChildren([homeRoute, inboxRoute.addChildren([inboxIndexRoute, conversationRoute]), connectionsRoute]),
]);

export function createDashboardRouter(context: RouterContext) {
  return createRouter({ routeTree, basepath: '/dashboard', context, defaultPreload: 'intent', scrollRestoration: false });
}

declare module '@tanstack/react-router' {
  interface Register {
    router: ReturnType<typeof createDashboardRouter>;
  }
}
