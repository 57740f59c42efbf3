import type { Conversation, Message } from '../../api/inbox-cache.ts';

/** How the inbox words things: a contact's name, a message in one line, a time. */

export function contactName(conversation: Conversation): string {
  const contact = conversation.contact;
  if (!contact) return 'Deleted contact';
  return contact.name ?? contact.profile_name ?? contact.phone_number;
}

/** The number under the name, when the name is not the number itself. */
export function contactNumber(conversation: Conversation): string | undefined {
  const contact = conversation.contact;
  if (!contact || contactName(conversation) === contact.phone_number) return undefined;
  return contact.phone_number;
}

type Content = Record<string, unknown> | undefined;

function field(content: Content, key: string): string | undefined {
  const value = content?.[key];
  return typeof value === 'string' && value ? value : undefined;
}

/** The object under the key the message's type names (the API's shape: docs/messages.md). */
export function contentOf(message: Message): Content {
  const value = (message as Record<string, unknown>)[message.type];
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
}

const MEDIA_LABELS: Partial<Record<Message['type'], string>> = {
  image: '📷 Photo',
  video: '🎥 Video',
  audio: '🎤 Audio',
  document: '📄 Document',
  sticker: 'Sticker',
};

/** A message in one line, for the list's preview and for a quoted reply. */
export function preview(message: Message): string {
  const content = contentOf(message);
  switch (message.type) {
    case 'text':
      return field(content, 'body') ?? '';
    case 'image':
    case 'video':
    case 'audio':
    case 'document':
    case 'sticker': {
      const label = MEDIA_LABELS[message.type]!;
      const detail = field(content, 'caption') ?? field(content, 'filename');
      return detail ? `${label}: ${detail}` : label;
    }
    case 'template':
      return `Template: ${field(content, 'name') ?? 'unnamed'}`;
    case 'reaction': {
      const emoji = field(content, 'emoji');
      return emoji ? `Reacted ${emoji}` : 'Removed a reaction';
    }
    case 'location':
      return `📍 ${field(content, 'name') ?? field(content, 'address') ?? 'Location'}`;
    case 'contacts':
      return '👤 Contact card';
    case 'interactive':
      return interactiveText(content) ?? 'Interactive message';
    case 'button':
      return field(content, 'text') ?? 'Button';
    case 'order':
      return '🛒 Order';
    case 'system':
      return field(content, 'body') ?? 'System message';
    case 'request_welcome':
      return 'Opened the chat';
    default:
      return 'Unsupported message';
  }
}

/** An interactive message's words: the body we sent, or the reply the customer chose. */
export function interactiveText(content: Content): string | undefined {
  const body = content?.body as Content;
  const reply = (content?.button_reply ?? content?.list_reply) as Content;
  return field(body, 'text') ?? field(reply, 'title');
}

const time = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const day = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short' });
const full = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A list's time: the hour today, the day before that. */
export function shortTime(iso: string, now = new Date()): string {
  const date = new Date(iso);
  return date.toDateString() === now.toDateString() ? time.format(date) : day.format(date);
}

export function fullTime(iso: string): string {
  return full.format(new Date(iso));
}

export function clockTime(iso: string): string {
  return time.format(new Date(iso));
}
