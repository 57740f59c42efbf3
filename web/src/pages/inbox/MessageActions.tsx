import type { Conversation, Message } from './inbox-types.ts';

/** What a member can do to one message in the thread: react, reply to it. */
export function MessageActions(_props: { message: Message; conversation: Conversation }) {
  return null;
}
