import type { QueryClient } from '@tanstack/react-query';
import { ApiError } from '../api/client.ts';
import {
  findConversation,
  removeConversation,
  upsertContact,
  upsertConversation,
  upsertMessage,
  type Contact,
  type Conversation,
  type Message,
} from '../api/inbox-cache.ts';
import { queryKeys } from '../api/keys.ts';
import type { EventEnvelope } from '../api/types.ts';

/** The first element of the query keys whose data the events below keep current. */
const LIVE_KEYS = new Set<string>(
  [
    queryKeys.connections,
    queryKeys.conversations,
    queryKeys.conversation(''),
    queryKeys.messages(''),
    queryKeys.lock(''),
    queryKeys.notes(''),
    queryKeys.templates(''),
  ].map((key) => key[0]),
);

/**
 * Applies the live stream's events to the query cache, so every page shows what changed without
 * asking: messages into their thread and their conversation's row, conversations into the lists
 * they now belong in (and out of those they left), contacts into the rows that show them, and the
 * lock of a conversation refetched by whoever shows it. A conversation the cache does not hold yet
 * (a new thread, one on a page not loaded) is fetched once, with its contact, then placed.
 */
export function createDispatcher(queryClient: QueryClient, fetchConversation: (id: string) => Promise<Conversation>) {
  /** Conversations being fetched, and whether another event came in for one meanwhile. */
  const fetching = new Map<string, { again: boolean }>();

  function refresh(id: string): void {
    const running = fetching.get(id);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    fetching.set(id, state);
    void (async () => {
      do {
        state.again = false;
        try {
          upsertConversation(queryClient, await fetchConversation(id));
        } catch (error) {
          // Folded into another by a contact merge, or no longer visible: it leaves the lists.
          if (error instanceof ApiError && error.status === 404) removeConversation(queryClient, id);
        }
      } while (state.again);
      fetching.delete(id);
    })();
  }

  /** Whether any list of conversations is held: otherwise a conversation not held has nowhere to go. */
  function listsShown(): boolean {
    return queryClient.getQueryCache().findAll({ queryKey: queryKeys.conversations }).length > 0;
  }

  function conversationChanged(conversation: Conversation): void {
    // A list takes in only a conversation whose contact it can show: without one here, fetch it.
    const known = findConversation(queryClient, conversation.id);
    if (known?.contact !== undefined) upsertConversation(queryClient, conversation);
    else if (known || listsShown()) refresh(conversation.id);
  }

  return {
    apply(event: EventEnvelope): void {
      const object = event.data.object;
      switch (event.type) {
        case 'message.received':
        case 'message.sent':
        case 'message.echo': {
          // A new message brings its conversation to the top of the lists: one not held yet is fetched.
          const message = object as unknown as Message;
          if (!upsertMessage(queryClient, message) && listsShown()) refresh(message.conversation_id);
          return;
        }
        case 'message.status':
          // A status moves no conversation in the order: one not held stays where the lists have not reached.
          upsertMessage(queryClient, object as unknown as Message);
          return;
        case 'conversation.created':
        case 'conversation.updated':
        case 'conversation.window_expiring':
          conversationChanged(object as unknown as Conversation);
          return;
        case 'conversation.lock_changed':
        case 'conversation.lock_requested':
          void queryClient.invalidateQueries({ queryKey: queryKeys.lock(String(object.conversation_id)) });
          return;
        case 'contact.updated':
        case 'contact.consent_changed':
          upsertContact(queryClient, object as unknown as Contact);
          return;
        case 'connection.connected':
        case 'connection.disconnected':
        case 'connection.needs_reauth':
        case 'connection.quality_changed':
        case 'connection.limit_changed':
          void queryClient.invalidateQueries({ queryKey: queryKeys.connections });
          return;
        case 'template.status_changed':
          if (event.connection_id) void queryClient.invalidateQueries({ queryKey: queryKeys.templates(event.connection_id) });
          return;
        default:
          return;
      }
    },

    /**
     * What the events keep current, loaded before `before`, may have missed some (a first
     * connection, or a resume the server could not honour): refetched where shown, marked stale
     * elsewhere. A query still loading for the first time is left alone: restarting it would only
     * delay the page. What no event changes (the members) is not fetched again.
     */
    stale(before: number): void {
      void queryClient.invalidateQueries(
        {
          predicate: (query) => LIVE_KEYS.has(String(query.queryKey[0])) && query.state.dataUpdatedAt > 0 && query.state.dataUpdatedAt < before,
        },
        { cancelRefetch: false },
      );
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
