import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useApi } from '../../../auth/SessionContext.tsx';
import type { ContactWindow, Conversation } from './types.ts';

const HOUR_MS = 3_600_000;

/** Every reading of a conversation's window (whatever `window_expires_at` it was read for). */
export const windowKey = (conversation: Pick<Conversation, 'contact_id' | 'connection_id'>) =>
  ['contact-window', conversation.contact_id, conversation.connection_id] as const;

/**
 * The 24-hour customer service window, as the service judges it (`GET /v1/contacts/{id}/window`):
 * by the service's clock, which is what a send is checked against, not this machine's. Read again
 * whenever the conversation's `window_expires_at` moves (a customer message), and around the time
 * it is due to close.
 */
export function useCustomerWindow(conversation: Conversation) {
  const api = useApi();
  return useQuery({
    queryKey: [...windowKey(conversation), conversation.window_expires_at],
    queryFn: () => api.get<ContactWindow>(`/v1/contacts/${conversation.contact_id}/window`, { query: { connection_id: conversation.connection_id } }),
    staleTime: 60_000,
    // A customer writing moves `window_expires_at`: the reply box must not blink away (and drop the
    // lease and any attachment) while the window is read again.
    placeholderData: keepPreviousData,
    refetchInterval: (query) => {
      const window = query.state.data;
      if (!window?.open || !window.expires_at) return false;
      return Math.min(Math.max(Date.parse(window.expires_at) - Date.now() + 1_000, 5_000), HOUR_MS);
    },
  });
}

/** Why only a template can be sent now: the customer's silence, said plainly. */
export function closedWindowReason(window: Pick<ContactWindow, 'last_inbound_at' | 'expires_at'>, format: (iso: string) => string): string {
  return window.last_inbound_at && window.expires_at
    ? `The customer last wrote on ${format(window.last_inbound_at)}, so the 24-hour window for free-form replies closed on ${format(window.expires_at)}.`
    : 'The customer has not written to this number yet, so there is no 24-hour window for free-form replies.';
}
