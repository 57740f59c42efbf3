import type { Conversation } from './inbox-types.ts';

/** The conversation's side panel: assignee, control, state, tags, internal notes, the lock. */
export function DetailsPanel(_props: { conversation: Conversation }) {
  return null;
}
