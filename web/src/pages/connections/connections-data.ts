import { useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { sandboxAvailable } from '../../api/sandbox.ts';
import { queryKeys } from '../../api/keys.ts';
import type { Connection } from '../../api/types.ts';
import { useApi } from '../../auth/SessionContext.tsx';
import { useLiveEvents } from '../../live/events.tsx';

/** Under `queryKeys.connections`, so the live stream's `connection.*` invalidation reaches one connection's page too. */
export const connectionsQueryKey = queryKeys.connections;
export const connectionQueryKey = (id: string) => [...queryKeys.connections, id] as const;

/** Every connection of the organization (an organization has few; the API's cursor is followed anyway). */
export function useConnections() {
  const api = useApi();
  return useQuery({
    queryKey: connectionsQueryKey,
    queryFn: () => api.all<Connection>('/v1/connections'),
  });
}

export function useConnection(id: string) {
  const api = useApi();
  return useQuery({
    queryKey: connectionQueryKey(id),
    queryFn: ({ signal }) => api.get<Connection>(`/v1/connections/${encodeURIComponent(id)}`, { signal }),
  });
}

/** Whether the service runs on the sandbox provider (its control API answers): the pages offer its stand-ins then. */
export function useSandbox() {
  return useQuery({ queryKey: ['sandbox-available'], queryFn: sandboxAvailable, staleTime: Infinity });
}

/**
 * A connection the API answered (a sync, a re-authorisation, a disconnect, an event's object) put
 * where the pages show it, unless what is shown is already newer.
 */
export function storeConnection(queryClient: QueryClient, connection: Connection): void {
  const newer = (current: Connection | undefined) => !current || current.updated_at <= connection.updated_at;
  queryClient.setQueryData<Connection>(connectionQueryKey(connection.id), (current) => (newer(current) ? connection : current));
  queryClient.setQueryData<Connection[]>(connectionsQueryKey, (list) =>
    list?.map((current) => (current.id === connection.id && newer(current) ? connection : current)),
  );
}

/**
 * The history import's progress as it happens: each `onboarding.*` event carries the connection,
 * so its object replaces the cached one without another request.
 */
export function useOnboardingUpdates(): void {
  const queryClient = useQueryClient();
  useLiveEvents(['onboarding.progress', 'onboarding.completed', 'onboarding.failed'], (event) => {
    // null: events may have been missed (a resume the server could not honour): read them again.
    if (event) storeConnection(queryClient, event.data.object as unknown as Connection);
    else void queryClient.invalidateQueries({ queryKey: connectionsQueryKey });
  });
}

/**
 * The sandbox's stand-in for the provider's signup popup on re-authorisation: a single-use code for
 * the same account and number (docs/sandbox.md, `/control/numbers/{id}/code`).
 */
export async function mintSandboxCode(phoneNumberId: string): Promise<string> {
  const response = await fetch(`/sandbox/control/numbers/${encodeURIComponent(phoneNumberId)}/code`, {
    method: 'POST',
    headers: { accept: 'application/json' },
  });
  const body = (await response.json().catch(() => null)) as { code?: string; error?: { message?: string } } | null;
  if (!response.ok || !body?.code) throw new Error(body?.error?.message ?? `The sandbox answered ${response.status}.`);
  return body.code;
}

export const connectionLabel = (connection: Pick<Connection, 'name' | 'verified_name' | 'display_phone_number' | 'id'>) =>
  connection.name ?? connection.verified_name ?? connection.display_phone_number ?? connection.id;
