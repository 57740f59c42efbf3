import { useNavigate } from '@tanstack/react-router';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useId, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { isUnread, type Conversation, type ConversationFilters } from '../../api/inbox-cache.ts';
import { useConversationList } from '../../api/inbox.ts';
import { useSignedIn } from '../../auth/SessionContext.tsx';
import { Empty, ErrorMessage, Loading } from '../../ui/controls.tsx';
import { contactName, contactNumber, fullTime, preview, shortTime } from './format.ts';
import styles from './inbox.module.css';

/** Every row is this tall (CSS clamps its lines), so the virtualizer never has to measure one. */
const ROW_HEIGHT = 76;
/** Rows from the end at which the next page is asked for, so scrolling rarely reaches the loader. */
const PREFETCH_ROWS = 15;

/** One copy of each conversation: a row that moved to the front can also come with a later page. */
function flatten(pages: { data: Conversation[] }[] | undefined): Conversation[] {
  const seen = new Set<string>();
  const rows: Conversation[] = [];
  for (const page of pages ?? []) {
    for (const conversation of page.data) {
      if (seen.has(conversation.id)) continue;
      seen.add(conversation.id);
      rows.push(conversation);
    }
  }
  return rows;
}

/**
 * The conversation list: a listbox whose rows are rendered only where the list is scrolled to
 * (1,000s of rows stay smooth), loading the next page of the API's cursor before its end comes into
 * view. Keyboard: ↑/↓ move the highlight, Enter opens it; j/k open the next/previous conversation;
 * Home/End go to the first/last loaded row.
 */
export function ConversationList({ filters, filtered, selectedId }: { filters: ConversationFilters; filtered: boolean; selectedId: string | undefined }) {
  const list = useConversationList(filters);
  const conversations = useMemo(() => flatten(list.data?.pages), [list.data]);
  const navigate = useNavigate();
  const me = useSignedIn().member.id;
  const id = useId();
  const scrollRef = useRef<HTMLDivElement>(null);
  const selectedIndex = selectedId ? conversations.findIndex((conversation) => conversation.id === selectedId) : -1;
  const [active, setActive] = useState(-1);
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = list;

  const virtualizer = useVirtualizer({
    count: conversations.length + (hasNextPage ? 1 : 0),
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 6,
    // Rows in the very first paint: without it the list waits a frame to measure itself before rendering any.
    initialRect: { width: 0, height: window.innerHeight },
    getItemKey: (index) => conversations[index]?.id ?? 'loader',
  });
  const items = virtualizer.getVirtualItems();
  const lastShown = items.at(-1)?.index ?? -1;

  useEffect(() => {
    if (hasNextPage && !isFetchingNextPage && lastShown >= conversations.length - PREFETCH_ROWS) void fetchNextPage();
  }, [hasNextPage, isFetchingNextPage, fetchNextPage, lastShown, conversations.length]);

  // The highlight follows the open conversation (a click, a link, j/k) until the arrows move it.
  useEffect(() => {
    if (selectedIndex !== -1) setActive(selectedIndex);
  }, [selectedIndex]);

  if (list.isPending) return <Loading label="Loading conversations…" />;
  if (list.error && conversations.length === 0) return <ErrorMessage error={list.error} />;
  if (conversations.length === 0) {
    return (
      <Empty>{filtered ? 'No conversations match these filters.' : "No conversations yet. Connect a number, and customers' messages will appear here."}</Empty>
    );
  }

  const open = (index: number) => {
    const conversation = conversations[index];
    if (!conversation) return;
    setActive(index);
    virtualizer.scrollToIndex(index);
    void navigate({ to: '/inbox/$conversationId', params: { conversationId: conversation.id }, search: (previous) => previous });
  };
  const highlight = (index: number) => {
    const next = Math.max(0, Math.min(conversations.length - 1, index));
    setActive(next);
    virtualizer.scrollToIndex(next);
  };
  const current = active === -1 ? selectedIndex : active;
  const onKeyDown = (event: KeyboardEvent) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const keys: Record<string, () => void> = {
      ArrowDown: () => highlight(current + 1),
      ArrowUp: () => highlight(current === -1 ? 0 : current - 1),
      Home: () => highlight(0),
      End: () => highlight(conversations.length - 1),
      Enter: () => open(current === -1 ? 0 : current),
      ' ': () => open(current === -1 ? 0 : current),
      j: () => open(Math.min(conversations.length - 1, current + 1)),
      k: () => open(Math.max(0, current - 1)),
    };
    const action = keys[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  };
  const optionId = (conversation: Conversation) => `${id}-${conversation.id}`;
  const activeShown = items.some((item) => item.index === current) ? conversations[current] : undefined;

  return (
    <div
      ref={scrollRef}
      className={styles.list}
      role="listbox"
      aria-label="Conversations"
      tabIndex={0}
      aria-activedescendant={activeShown ? optionId(activeShown) : undefined}
      aria-busy={isFetchingNextPage || undefined}
      onKeyDown={onKeyDown}
      data-testid="conversation-list"
    >
      <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
        {items.map((item) => {
          const conversation = conversations[item.index];
          const style = { height: item.size, transform: `translateY(${item.start}px)` };
          if (!conversation) {
            return (
              <div key={item.key} className={styles.loader} style={style} aria-hidden="true">
                Loading more…
              </div>
            );
          }
          const unread = isUnread(conversation);
          const last = conversation.last_message;
          const number = contactNumber(conversation);
          const at = conversation.last_message_at ?? conversation.created_at;
          return (
            <div
              key={item.key}
              id={optionId(conversation)}
              role="option"
              tabIndex={-1}
              aria-selected={conversation.id === selectedId}
              aria-posinset={item.index + 1}
              aria-setsize={hasNextPage ? -1 : conversations.length}
              className={styles.row}
              data-active={item.index === current || undefined}
              data-unread={unread || undefined}
              data-testid="conversation-row"
              data-conversation-id={conversation.id}
              style={style}
              onClick={() => open(item.index)}
            >
              <div className={styles.rowTop}>
                <span className={styles.name}>{contactName(conversation)}</span>
                <time dateTime={at} title={fullTime(at)} className={styles.time}>
                  {shortTime(at)}
                </time>
              </div>
              <div className={styles.rowMiddle}>
                {number && <span>{number}</span>}
                {conversation.state !== 'open' && <span className={styles.badge}>{conversation.state}</span>}
                {conversation.assignee_id === me && <span className={styles.badge}>yours</span>}
              </div>
              <div className={styles.rowBottom}>
                <span className={styles.preview}>{last ? `${last.direction === 'outbound' ? 'You: ' : ''}${preview(last)}` : 'No messages yet'}</span>
                {unread && (
                  <span className={styles.unread}>
                    <span className="visually-hidden">Unread</span>
                  </span>
                )}
              </div>
            </div>
          );
        })}
      </div>
    </div>
  );
}
