import { Outlet, useParams, useSearch } from '@tanstack/react-router';
import { useMemo } from 'react';
import type { ConversationFilters } from '../../api/inbox-cache.ts';
import { useConversation } from '../../api/inbox.ts';
import { useSignedIn } from '../../auth/SessionContext.tsx';
import { Empty, ErrorMessage, Loading } from '../../ui/controls.tsx';
import { Composer } from './Composer.tsx';
import { ConversationHeader } from './ConversationHeader.tsx';
import { ConversationList } from './ConversationList.tsx';
import { DetailsPanel } from './DetailsPanel.tsx';
import { InboxFilters } from './InboxFilters.tsx';
import type { InboxSearch } from './search.ts';
import styles from './inbox.module.css';
import { ThreadView } from './ThreadView.tsx';

/**
 * The inbox's route components: the conversation list with its filters (search params, so a view
 * can be linked and survives a reload), and the selected conversation's pane.
 */
export { parseInboxSearch, type InboxSearch } from './search.ts';

/** The URL's filters as the API takes them: `me` becomes the member's id. */
function useListFilters(search: InboxSearch): ConversationFilters {
  const memberId = useSignedIn().member.id;
  const { state, assignee, tag, window } = search;
  return useMemo(() => {
    const filters: ConversationFilters = {};
    if (state) filters.state = state;
    if (assignee) filters.assignee = assignee === 'me' ? memberId : assignee;
    if (tag) filters.tag = tag;
    if (window) filters.window = window;
    return filters;
  }, [state, assignee, tag, window, memberId]);
}

export function InboxLayout() {
  const search: InboxSearch = useSearch({ strict: false });
  const filters = useListFilters(search);
  const { conversationId } = useParams({ strict: false });
  return (
    <div className={styles.inbox}>
      <section className={styles.listColumn} aria-labelledby="inbox-title">
        <header className={styles.listHeader}>
          <h1 id="inbox-title">Inbox</h1>
          <InboxFilters search={search} />
        </header>
        <ConversationList filters={filters} filtered={Object.keys(search).length > 0} selectedId={conversationId} />
      </section>
      <div className={styles.pane}>
        <Outlet />
      </div>
    </div>
  );
}

export function NoConversationSelected() {
  return <Empty>Select a conversation to read it here.</Empty>;
}

export function ConversationPane({ conversationId }: { conversationId: string }) {
  const conversation = useConversation(conversationId);
  if (conversation.error && !conversation.data) return <ErrorMessage error={conversation.error} />;
  const c = conversation.data;
  if (!c) return <Loading />;
  return (
    // Keyed: another conversation starts its thread afresh (its scroll position, what it has seen).
    <div className={styles.conversation} key={c.id}>
      <section className={styles.threadColumn} aria-labelledby="conversation-title">
        <ConversationHeader conversation={c} />
        <ThreadView conversation={c} />
        <Composer conversation={c} />
      </section>
      <div className={styles.details}>
        <DetailsPanel conversation={c} />
      </div>
    </div>
  );
}
