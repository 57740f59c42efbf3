import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from '@tanstack/react-router';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiError } from './api/client.ts';
import { createSession } from './auth/session.ts';
import { SessionProvider } from './auth/SessionContext.tsx';
import { createDashboardRouter } from './router.tsx';
import './styles/global.css';

const session = createSession();
const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 30_000,
      // The live stream keeps what is shown current; refetching on focus would only add load.
      refetchOnWindowFocus: false,
      // A 4xx will answer the same again; only transient failures are worth a retry.
      retry: (failures, error) => failures < 2 && !(error instanceof ApiError && error.status < 500),
    },
  },
});
const router = createDashboardRouter({ session, queryClient });

// A session that ends (signed out here or in another tab, or expired) sends every page back through
// the route guards, which redirect to sign-in, and drops what it had read. Finding no session on
// load drops nothing: the public pages' anonymous reads may be in flight then (the invitation's
// probe), and a query cleared mid-flight never settles.
let previous = session.state.status;
session.subscribe(() => {
  const status = session.state.status;
  if (status !== previous && status !== 'loading') void router.invalidate();
  if (status === 'signed_out' && previous !== 'loading') queryClient.clear();
  previous = status;
});
void session.resume();

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <SessionProvider session={session}>
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </SessionProvider>
  </StrictMode>,
);
