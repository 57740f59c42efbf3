import * as Popover from '@radix-ui/react-popover';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { queryKeys } from '../../api/keys.ts';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { ErrorMessage } from '../../ui/controls.tsx';
import styles from './compose/compose.module.css';
import { snippet } from './compose/format.ts';
import { setReplyTarget } from './compose/reply-store.ts';
import type { Conversation, Message } from './inbox-types.ts';

/** The reactions offered in one tap; each button is named for screen readers. */
const EMOJIS = [
  ['👍', 'thumbs up'],
  ['❤️', 'heart'],
  ['😂', 'laughing'],
  ['😮', 'surprised'],
  ['😢', 'sad'],
  ['🙏', 'thank you'],
] as const;

/** Messages nobody reacts or replies to: reactions themselves, and the provider's own notices. */
const NOT_ANSWERABLE = new Set<Message['type']>(['reaction', 'system', 'request_welcome', 'unsupported']);

/** What a member can do to one message in the thread: react, reply to it. */
export function MessageActions({ message, conversation }: { message: Message; conversation: Conversation }) {
  const { converse } = usePermissions();
  // The provider must have the message for a reaction or a quote to point at it (reaction_target_invalid otherwise).
  if (!converse || NOT_ANSWERABLE.has(message.type) || message.provider_message_id === null) return null;
  return <Actions message={message} conversation={conversation} />;
}

function Actions({ message, conversation }: { message: Message; conversation: Conversation }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const quoted = snippet(message);
  const react = useMutation({
    mutationFn: (emoji: string) => api.post<Message>(`/v1/messages/${message.id}/reactions`, { emoji }),
    onSuccess: async () => {
      setOpen(false);
      await queryClient.invalidateQueries({ queryKey: queryKeys.messages(conversation.id) });
    },
  });
  return (
    <div className={styles.actions}>
      <Popover.Root open={open} onOpenChange={setOpen}>
        <Popover.Trigger asChild>
          <button type="button" className={styles.action} aria-label={`React to ${quoted}`}>
            React
          </button>
        </Popover.Trigger>
        <Popover.Portal>
          <Popover.Content className={styles.popover} sideOffset={4} aria-label={`Reactions to ${quoted}`}>
            <div className={styles.emojis}>
              {EMOJIS.map(([emoji, name]) => (
                <button
                  key={emoji}
                  type="button"
                  className={styles.emoji}
                  aria-label={`React with ${name}`}
                  disabled={react.isPending}
                  onClick={() => react.mutate(emoji)}
                >
                  {emoji}
                </button>
              ))}
            </div>
            <ErrorMessage error={react.error} />
          </Popover.Content>
        </Popover.Portal>
      </Popover.Root>
      <button
        type="button"
        className={styles.action}
        aria-label={`Reply to ${quoted}`}
        onClick={() => setReplyTarget(conversation.id, { messageId: message.id, snippet: snippet(message, 80) })}
      >
        Reply
      </button>
    </div>
  );
}
