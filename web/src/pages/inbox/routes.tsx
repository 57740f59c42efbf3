import { Outlet } from '@tanstack/react-router';
import { Empty } from '../../ui/controls.tsx';

/**
 * The inbox's route components. The inbox is being built (issue 19); this file is its entry point:
 * the conversation list with its filters (search params), and the selected conversation's pane.
 */
export interface InboxSearch {
  state?: 'open' | 'pending' | 'closed';
  assignee?: string;
  tag?: string;
  window?: 'open' | 'closed';
}

export function parseInboxSearch(search: Record<string, unknown>): InboxSearch {
  const result: InboxSearch = {};
  if (search.state === 'open' || search.state === 'pending' || search.state === 'closed') result.state = search.state;
  if (typeof search.assignee === 'string' && search.assignee) result.assignee = search.assignee;
  if (typeof search.tag === 'string' && search.tag) result.tag = search.tag;
  if (search.window === 'open' || search.window === 'closed') result.window = search.window;
  return result;
}

export function InboxLayout() {
  return (
    <div>
      <h1>Inbox</h1>
      <Outlet />
    </div>
  );
}

export function NoConversationSelected() {
  return <Empty>No conversations yet. Connect a number, and customers' messages will appear here.</Empty>;
}

export function ConversationPane({ conversationId }: { conversationId: string }) {
  return <Empty>{conversationId}</Empty>;
}
