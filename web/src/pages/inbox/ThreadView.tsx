import { useLayoutEffect, useMemo, useRef } from 'react';
import type { Conversation, Message } from '../../api/inbox-cache.ts';
import { useMessages } from '../../api/inbox.ts';
import { Button, Empty, ErrorMessage, Loading } from '../../ui/controls.tsx';
import { contentOf } from './format.ts';
import styles from './inbox.module.css';
import { MessageBubble, type Reaction } from './MessageBubble.tsx';

/** Within this many pixels of the bottom, the thread follows new messages down. */
const NEAR_BOTTOM_PX = 80;
/** Within this many pixels of the top, the next older page is asked for. */
const NEAR_TOP_PX = 200;

/**
 * Reactions are messages of their own in the API; the thread shows them on the message they react
 * to, the latest of each side (an empty emoji takes one back). A customer's reaction names the
 * message by the provider's id, ours by our id.
 */
function withReactions(messages: Message[]): { shown: Message[]; reactions: Map<string, Reaction[]> } {
  const byProviderId = new Map(messages.filter((m) => m.provider_message_id).map((m) => [m.provider_message_id!, m.id]));
  const latest = new Map<string, Map<Message['direction'], string>>();
  const shown: Message[] = [];
  for (const message of messages) {
    if (message.type !== 'reaction') {
      shown.push(message);
      continue;
    }
    const content = contentOf(message);
    const target = typeof content?.message_id === 'string' ? content.message_id : undefined;
    const targetId = target && (byProviderId.get(target) ?? target);
    if (!targetId) continue;
    const sides = latest.get(targetId) ?? new Map<Message['direction'], string>();
    sides.set(message.direction, typeof content?.emoji === 'string' ? content.emoji : '');
    latest.set(targetId, sides);
  }
  const reactions = new Map<string, Reaction[]>();
  for (const [targetId, sides] of latest) {
    const list = [...sides].filter(([, emoji]) => emoji).map(([direction, emoji]) => ({ direction, emoji }));
    if (list.length > 0) reactions.set(targetId, list);
  }
  return { shown, reactions };
}

/**
 * A conversation's messages, oldest at the top: it opens at the newest, loads older pages as it is
 * scrolled up (keeping what was on screen in place), and follows new messages down while it is at
 * the bottom.
 */
export function ThreadView({ conversation }: { conversation: Conversation }) {
  const thread = useMessages(conversation.id);
  const messages = useMemo(() => (thread.data?.pages ?? []).flatMap((page) => page.data).toReversed(), [thread.data]);
  const { shown, reactions } = useMemo(() => withReactions(messages), [messages]);
  const byId = useMemo(() => new Map(messages.map((message) => [message.id, message])), [messages]);
  const scroller = useRef<HTMLDivElement>(null);
  const content = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const previous = useRef<{ first?: string; last?: string; height: number; top: number }>({ height: 0, top: 0 });
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = thread;

  const loadOlder = () => {
    if (hasNextPage && !isFetchingNextPage) void fetchNextPage();
  };

  useLayoutEffect(() => {
    const element = scroller.current;
    if (!element) return;
    const first = shown[0]?.id;
    const last = shown.at(-1)?.id;
    const before = previous.current;
    if (before.first === undefined || (last !== before.last && atBottom.current)) {
      element.scrollTop = element.scrollHeight;
    } else if (first !== before.first && last === before.last) {
      // Older messages came in above: what was on screen stays where it was.
      element.scrollTop = before.top + (element.scrollHeight - before.height);
    }
    previous.current = { first, last, height: element.scrollHeight, top: element.scrollTop };
    // A first page too short to scroll could never be scrolled up to load the next.
    if (element.scrollHeight <= element.clientHeight && hasNextPage && !isFetchingNextPage) void fetchNextPage();
  }, [shown, hasNextPage, isFetchingNextPage, fetchNextPage]);

  // Media and late layout grow the thread after it was scrolled: keep the newest in view.
  useLayoutEffect(() => {
    const element = scroller.current;
    const inner = content.current;
    if (!element || !inner) return;
    const observer = new ResizeObserver(() => {
      if (atBottom.current) element.scrollTop = element.scrollHeight;
      previous.current = { ...previous.current, height: element.scrollHeight, top: element.scrollTop };
    });
    observer.observe(inner);
    return () => observer.disconnect();
  }, [thread.isPending]);

  const onScroll = () => {
    const element = scroller.current!;
    atBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < NEAR_BOTTOM_PX;
    previous.current = { ...previous.current, top: element.scrollTop };
    if (element.scrollTop < NEAR_TOP_PX) loadOlder();
  };

  if (thread.isPending) return <Loading label="Loading messages…" />;
  if (thread.error && messages.length === 0) return <ErrorMessage error={thread.error} />;
  return (
    <div ref={scroller} className={styles.thread} onScroll={onScroll} data-testid="thread">
      <div ref={content} className={styles.threadInner}>
        {hasNextPage ? (
          <Button className={styles.older} onClick={loadOlder} disabled={isFetchingNextPage}>
            {isFetchingNextPage ? 'Loading older messages…' : 'Load older messages'}
          </Button>
        ) : (
          shown.length > 0 && <div className={styles.threadStart}>The beginning of the conversation</div>
        )}
        {shown.length === 0 ? (
          <Empty>No messages yet.</Empty>
        ) : (
          <div role="log" aria-label="Messages" className={styles.messages}>
            {shown.map((message) => (
              <MessageBubble
                key={message.id}
                message={message}
                conversation={conversation}
                replyTo={message.context?.reply_to ? byId.get(message.context.reply_to) : undefined}
                reactions={reactions.get(message.id)}
              />
            ))}
          </div>
        )}
      </div>
    </div>
  );
}
