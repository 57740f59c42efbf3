import { useMutation, useQueryClient } from '@tanstack/react-query';
import { queryKeys } from '../../../api/keys.ts';
import type { Conversation } from './types.ts';

/**
 * A write that answers the conversation (PATCH, assign, control, tags): the answer goes into the
 * conversation's cache entry, merged so that what the entry was read with (an expanded contact, the
 * last message) stays, and every list is read again, since the change may move it in or out of a filter.
 */
export function useConversationWrite<Input>(conversation: Conversation, write: (input: Input) => Promise<Conversation>) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: write,
    onSuccess: async (updated) => {
      queryClient.setQueryData<Conversation>(queryKeys.conversation(conversation.id), (old) => (old ? { ...old, ...updated } : old));
      await queryClient.invalidateQueries({ queryKey: queryKeys.conversations });
    },
  });
}
