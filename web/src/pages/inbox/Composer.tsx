import type { Conversation } from './inbox-types.ts';

/** The reply composer of a conversation (text, media, templates when the window is closed, reply-to). */
export function Composer(_props: { conversation: Conversation }) {
  return null;
}
