import { upsertMessage } from '../../../api/inbox-cache.ts';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useRef } from 'react';
import { NetworkError, type ApiClient } from '../../../api/client.ts';
import { useApi } from '../../../auth/SessionContext.tsx';
import type { Conversation, Media, Message, SendMessageInput } from './types.ts';

/** A send body without its addressing: the conversation supplies the number and the contact. */
export type Content = Omit<SendMessageInput, 'connection_id' | 'contact_id' | 'to'>;

/**
 * Sends into a conversation: from its number, to its contact. A send that failed on the way (no
 * answer) is retried with the same Idempotency-Key when the same content is sent again, so a
 * customer never gets it twice; a refusal is an answer, and a later attempt is a new request.
 */
export function useSend(conversation: Conversation) {
  const api = useApi();
  const queryClient = useQueryClient();
  const unanswered = useRef<{ body: string; key: string } | null>(null);
  return useMutation({
    mutationFn: async (content: Content) => {
      const body = { connection_id: conversation.connection_id, contact_id: conversation.contact_id, ...content };
      const json = JSON.stringify(body);
      const key = unanswered.current?.body === json ? unanswered.current.key : crypto.randomUUID();
      try {
        const message = await api.post<Message>('/v1/messages', body, { idempotencyKey: key });
        unanswered.current = null;
        return message;
      } catch (error) {
        unanswered.current = error instanceof NetworkError ? { body: json, key } : null;
        throw error;
      }
    },
    // The answer is the message as stored: placed in the thread at once (the stream's events for it
    // then only move its status forward).
    onSuccess: (message) => void upsertMessage(queryClient, message),
  });
}

/** Uploads a file (`POST /v1/media`); the service decides its kind from its type and bytes. */
export function uploadMedia(api: ApiClient, file: File): Promise<Media> {
  const form = new FormData();
  form.append('file', file, file.name);
  return api.post<Media>('/v1/media', form);
}

/** What a media upload is sent as, with its caption where the kind takes one. */
export function mediaContent(media: Media, caption: string): Content {
  const text = caption.trim() || undefined;
  switch (media.kind) {
    case 'image':
      return { type: 'image', image: { media_id: media.id, caption: text } };
    case 'video':
      return { type: 'video', video: { media_id: media.id, caption: text } };
    case 'document':
      return { type: 'document', document: { media_id: media.id, caption: text, filename: media.filename ?? undefined } };
    case 'audio':
      return { type: 'audio', audio: { media_id: media.id } };
    case 'sticker':
      return { type: 'sticker', sticker: { media_id: media.id } };
  }
}

export const takesCaption = (media: Media) => media.kind === 'image' || media.kind === 'video' || media.kind === 'document';
