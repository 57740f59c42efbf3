import { useSyncExternalStore } from 'react';

/** The message a reply will quote: its id, and how the composer names it. */
export interface ReplyTarget {
  messageId: string;
  snippet: string;
}

/**
 * Which message each conversation's composer is replying to. A module-level store rather than a
 * context: the thread's message actions and the composer are siblings that nothing above them wraps,
 * and a reply chosen in one conversation must not follow the member into another.
 */
const targets = new Map<string, ReplyTarget>();
const listeners = new Set<() => void>();

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function setReplyTarget(conversationId: string, target: ReplyTarget | null): void {
  if (target) targets.set(conversationId, target);
  else targets.delete(conversationId);
  for (const listener of listeners) listener();
}

export function useReplyTarget(conversationId: string): ReplyTarget | null {
  return useSyncExternalStore(subscribe, () => targets.get(conversationId) ?? null);
}
