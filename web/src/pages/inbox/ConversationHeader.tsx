import { useEffect, useSyncExternalStore } from 'react';
import { isUnread, windowOpen, type Conversation } from '../../api/inbox-cache.ts';
import { useMarkRead } from '../../api/inbox.ts';
import { usePermissions } from '../../auth/SessionContext.tsx';
import { useCustomerWindow } from './compose/window.ts';
import { contactName, contactNumber, fullTime } from './format.ts';
import styles from './inbox.module.css';

/** Who the conversation is with, and the 24-hour window: what may be sent now. */
export function ConversationHeader({ conversation }: { conversation: Conversation }) {
  useMarkLatestRead(conversation);
  const number = contactNumber(conversation);
  return (
    <header className={styles.conversationHeader}>
      <div>
        <h2 id="conversation-title">{contactName(conversation)}</h2>
        {number && <div className={styles.muted}>{number}</div>}
      </div>
      <WindowStatus conversation={conversation} />
    </header>
  );
}

/**
 * The window as docs/window.md states it: open until `window_expires_at`, then only templates. The
 * service's own reading (the composer's, by the service's clock) once it is in; the conversation's
 * `window_expires_at` until then.
 */
export function WindowStatus({ conversation }: { conversation: Conversation }) {
  const judged = useCustomerWindow(conversation).data;
  const expires = judged ? judged.expires_at : conversation.window_expires_at;
  const open = judged ? judged.open : windowOpen(conversation);
  const text = !expires
    ? 'The customer has not written yet: only templates can be sent.'
    : open
      ? `Window open until ${fullTime(expires)}`
      : `Window closed since ${fullTime(expires)}: only templates can be sent.`;
  return (
    <div className={open ? styles.windowOpen : styles.windowClosed} data-testid="window-status" data-state={open ? 'open' : 'closed'}>
      {text}
    </div>
  );
}

function onVisibilityChange(changed: () => void) {
  document.addEventListener('visibilitychange', changed);
  return () => document.removeEventListener('visibilitychange', changed);
}

function useVisible(): boolean {
  return useSyncExternalStore(onVisibilityChange, () => document.visibilityState === 'visible');
}

/** Asked once per message, whatever re-renders: a failure is not retried in a loop. */
const requested = new Set<string>();

/**
 * Opening a conversation marks the customer's latest message read (the inbox's unread rule,
 * docs/dashboard.md): when it is the last message, not read yet, the member may write, and the tab
 * is in front. A message that arrives while the conversation is open is marked read the same way.
 */
function useMarkLatestRead(conversation: Conversation): void {
  const { converse } = usePermissions();
  const visible = useVisible();
  const markRead = useMarkRead();
  const target = isUnread(conversation) ? conversation.last_message!.id : undefined;
  const { mutate } = markRead;
  useEffect(() => {
    if (!target || !converse || !visible || requested.has(target)) return;
    requested.add(target);
    mutate(target);
  }, [target, converse, visible, mutate]);
}
