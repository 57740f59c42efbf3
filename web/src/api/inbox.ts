import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { useApi, useSession } from '../auth/SessionContext.tsx';
import { ApiError, type ApiClient } from './client.ts';
import { findConversation, upsertMessage, type Conversation, type ConversationFilters, type Message } from './inbox-cache.ts';
import { queryKeys } from './keys.ts';
import type { ErrorBody, ListPage } from './types.ts';

/** The inbox's reads: the conversation list, one conversation, its messages; marking read; media bytes. */

export const CONVERSATION_PAGE_SIZE = 50;
export const MESSAGE_PAGE_SIZE = 50;
const EXPAND = 'contact,last_message';

export function fetchConversation(api: ApiClient, id: string, signal?: AbortSignal): Promise<Conversation> {
  return api.get<Conversation>(`/v1/conversations/${encodeURIComponent(id)}`, { query: { expand: EXPAND }, signal });
}

/** The inbox list: latest activity first, a page at a time as the list scrolls. */
export function useConversationList(filters: ConversationFilters) {
  const api = useApi();
  return useInfiniteQuery({
    queryKey: queryKeys.conversationList(filters),
    queryFn: ({ pageParam, signal }) =>
      api.get<ListPage<Conversation>>('/v1/conversations', {
        query: { ...filters, sort: 'recent', expand: EXPAND, limit: CONVERSATION_PAGE_SIZE, after: pageParam },
        signal,
      }),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => (last.has_more ? last.next_cursor : null),
  });
}

/** One conversation with its contact; shown at once from a list that holds it while it loads. */
export function useConversation(id: string) {
  const api = useApi();
  const queryClient = useQueryClient();
  return useQuery<Conversation, Error, Conversation, ReturnType<typeof queryKeys.conversation>>({
    queryKey: queryKeys.conversation(id),
    queryFn: ({ signal }) => fetchConversation(api, id, signal),
    placeholderData: () => findConversation(queryClient, id),
  });
}

/** A conversation's messages, newest page first (the API's order); older pages load as the thread scrolls up. */
export function useMessages(conversationId: string) {
  const api = useApi();
  return useInfiniteQuery({
    queryKey: queryKeys.messages(conversationId),
    queryFn: ({ pageParam, signal }) =>
      api.get<ListPage<Message>>('/v1/messages', {
        query: { conversation_id: conversationId, limit: MESSAGE_PAGE_SIZE, after: pageParam },
        signal,
      }),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => (last.has_more ? last.next_cursor : null),
  });
}

/** Marks a customer's message read (the provider's read receipt); the answer goes into the cache. */
export function useMarkRead() {
  const api = useApi();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (messageId: string) => api.post<Message>(`/v1/messages/${encodeURIComponent(messageId)}/read`),
    onSuccess: (message) => {
      upsertMessage(queryClient, message);
    },
  });
}

/**
 * A media's bytes as an object URL: the download needs the bearer, which an <img src> cannot send.
 * The URL is revoked when the component lets go of it.
 */
export function useMediaUrl(mediaId: string | undefined) {
  const session = useSession();
  const [attempt, setAttempt] = useState(0);
  const [state, setState] = useState<{ url?: string; error?: string; pending: boolean }>({ pending: Boolean(mediaId) });
  useEffect(() => {
    if (!mediaId) return;
    const abort = new AbortController();
    let url: string | undefined;
    setState({ pending: true });
    void (async () => {
      const path = `/v1/media/${encodeURIComponent(mediaId)}/download`;
      try {
        const stale = session.currentToken();
        let response = await session.api.open(path, { signal: abort.signal });
        if (response.status === 401 && stale && (await session.renew(stale))) response = await session.api.open(path, { signal: abort.signal });
        if (!response.ok) {
          const body = (await response.json().catch(() => null)) as { error?: ErrorBody } | null;
          const error = body?.error ? new ApiError(response.status, body.error) : undefined;
          setState({ pending: false, error: error?.message ?? `The media could not be loaded (${response.status}).` });
          return;
        }
        url = URL.createObjectURL(await response.blob());
        setState({ pending: false, url });
      } catch (error) {
        if (!abort.signal.aborted) setState({ pending: false, error: error instanceof Error ? error.message : 'The media could not be loaded.' });
      }
    })();
    return () => {
      abort.abort();
      if (url) URL.revokeObjectURL(url);
    };
  }, [mediaId, session, attempt]);
  return { ...state, retry: () => setAttempt((n) => n + 1) };
}
