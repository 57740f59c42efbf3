import type { Message } from './types.ts';

const MEDIA_LABELS: Partial<Record<Message['type'], string>> = {
  image: 'a photo',
  video: 'a video',
  audio: 'an audio message',
  document: 'a document',
  sticker: 'a sticker',
  location: 'a location',
  contacts: 'a contact card',
  template: 'a template message',
  interactive: 'an interactive message',
};

/**
 * A short quotation of a message for labels ("Reply to “Where is my order?”"): its text or caption,
 * else what kind of message it is. Labels carry it so that every message's buttons have a name of
 * their own, for screen readers and for tests alike.
 */
export function snippet(message: Message, max = 40): string {
  const content = message[message.type] as { body?: unknown; caption?: unknown; text?: unknown } | undefined;
  const text = [content?.body, content?.caption, content?.text].find((value): value is string => typeof value === 'string' && value.trim() !== '');
  if (!text) return MEDIA_LABELS[message.type] ?? `a ${message.type} message`;
  const flat = text.replace(/\s+/g, ' ').trim();
  return `“${flat.length > max ? `${flat.slice(0, max - 1)}…` : flat}”`;
}

/** A time of day in the reader's locale: what "held until …" and note times show. */
export function clockTime(iso: string): string {
  return new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

/** A date and time, for notes and the window's closing time. */
export function dateTime(iso: string): string {
  return new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
}
