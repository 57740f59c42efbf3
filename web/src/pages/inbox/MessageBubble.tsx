import { useState } from 'react';
import type { Conversation, Message } from '../../api/inbox-cache.ts';
import { useMediaUrl } from '../../api/inbox.ts';
import { Button } from '../../ui/controls.tsx';
import { clockTime, contactName, contentOf, fullTime, interactiveText, preview } from './format.ts';
import styles from './inbox.module.css';
import { MessageActions } from './MessageActions.tsx';

export interface Reaction {
  direction: Message['direction'];
  emoji: string;
}

/** The ticks of an outbound message, as the customer's app shows them. */
const STATUS: Record<Exclude<Message['status'], 'received'>, { icon: string; label: string }> = {
  queued: { icon: '⏱', label: 'Queued' },
  sent: { icon: '✓', label: 'Sent' },
  delivered: { icon: '✓✓', label: 'Delivered' },
  read: { icon: '✓✓', label: 'Read' },
  failed: { icon: '⚠', label: 'Failed' },
};

/** One message of the thread: who sent it, what it says, its time, and for ours how far it got. */
export function MessageBubble({
  message,
  conversation,
  replyTo,
  reactions,
}: {
  message: Message;
  conversation: Conversation;
  replyTo: Message | undefined;
  reactions: Reaction[] | undefined;
}) {
  const inbound = message.direction === 'inbound';
  const at = message.sent_at ?? message.created_at;
  const sender = inbound ? contactName(conversation) : message.echo ? 'You, from the business app' : 'You';
  return (
    <article
      className={`${styles.bubble} ${inbound ? styles.inbound : styles.outbound}`}
      data-testid="message"
      data-message-id={message.id}
      data-direction={message.direction}
      data-status={message.status}
      aria-label={`${sender} at ${clockTime(at)}`}
    >
      {message.context?.forwarded && <div className={styles.muted}>{message.context.frequently_forwarded ? 'Forwarded many times' : 'Forwarded'}</div>}
      {message.context && (message.context.reply_to || message.context.reply_to_provider_message_id) && (
        <blockquote className={styles.quote} data-testid="reply-quote">
          {replyTo ? preview(replyTo) : 'A reply to an earlier message'}
        </blockquote>
      )}
      <MessageContent message={message} />
      <footer className={styles.bubbleFooter}>
        {message.imported && <span>imported</span>}
        <time dateTime={at} title={fullTime(at)}>
          {clockTime(at)}
        </time>
        {!inbound && message.status !== 'received' && <StatusTicks status={message.status} />}
      </footer>
      {message.status === 'failed' && (
        <p className={styles.failure} data-testid="message-error">
          Not delivered: {failureReason(message)}
        </p>
      )}
      {reactions && (
        <ul className={styles.reactions} aria-label="Reactions">
          {reactions.map((reaction) => (
            <li key={reaction.direction} title={reaction.direction === 'inbound' ? contactName(conversation) : 'You'}>
              {reaction.emoji}
            </li>
          ))}
        </ul>
      )}
      <MessageActions message={message} conversation={conversation} />
    </article>
  );
}

function StatusTicks({ status }: { status: Exclude<Message['status'], 'received'> }) {
  const { icon, label } = STATUS[status];
  return (
    <span className={styles.ticks} data-status={status} data-testid="message-status" title={label}>
      <span aria-hidden="true">{icon}</span>
      <span className="visually-hidden">{label}</span>
    </span>
  );
}

function failureReason(message: Message): string {
  const error = message.error;
  if (!error) return 'the provider gave no reason.';
  const words = error.message ?? error.title ?? error.details ?? 'the provider gave no reason';
  return error.code === null ? words : `${words} (${error.code})`;
}

type Content = Record<string, unknown>;

function hostOf(link: string): string {
  try {
    return new URL(link).host;
  } catch {
    return link;
  }
}
const text = (content: Content | undefined, key: string) => (typeof content?.[key] === 'string' ? content[key] : undefined);

/** The values a template was sent with: a list (of strings or `{text}`), or named values. */
function templateValues(body: unknown): string[] {
  const value = (item: unknown) =>
    typeof item === 'string' ? item : item && typeof item === 'object' && 'text' in item && typeof item.text === 'string' ? item.text : undefined;
  if (Array.isArray(body)) return body.map(value).filter((item) => item !== undefined);
  if (body && typeof body === 'object') return Object.entries(body).map(([name, item]) => `${name}: ${value(item) ?? ''}`);
  return [];
}

function MessageContent({ message }: { message: Message }) {
  const content = contentOf(message);
  switch (message.type) {
    case 'text':
      return <p className={styles.text}>{text(content, 'body')}</p>;
    case 'image':
    case 'sticker':
    case 'video':
    case 'audio':
    case 'document':
      return <MediaContent type={message.type} content={content} />;
    case 'template': {
      const values = templateValues(content?.body);
      return (
        <div>
          <p className={styles.text}>
            <span className={styles.badge}>Template</span> {text(content, 'name') ?? 'unnamed'}
            {text(content, 'language') && <span className={styles.muted}> · {text(content, 'language')}</span>}
          </p>
          {values.length > 0 && <p className={styles.muted}>With: {values.join(', ')}</p>}
        </div>
      );
    }
    case 'interactive': {
      const action = content?.action as { buttons?: { reply?: { title?: string } }[]; button?: string } | undefined;
      const buttons = action?.buttons?.map((button) => button.reply?.title).filter(Boolean) ?? [];
      return (
        <div>
          <p className={styles.text}>{interactiveText(content)}</p>
          {buttons.length > 0 && <div className={styles.muted}>Buttons: {buttons.join(' · ')}</div>}
          {action?.button && <div className={styles.muted}>List: {action.button}</div>}
        </div>
      );
    }
    case 'location': {
      const latitude = content?.latitude;
      const longitude = content?.longitude;
      return (
        <p className={styles.text}>
          📍 {[text(content, 'name'), text(content, 'address')].filter(Boolean).join(', ') || 'A location'}
          {typeof latitude === 'number' && typeof longitude === 'number' && (
            <span className={styles.muted}>
              {' '}
              ({latitude}, {longitude})
            </span>
          )}
        </p>
      );
    }
    default:
      return <p className={styles.text}>{preview(message)}</p>;
  }
}

const MEDIA_NAMES = { image: 'image', sticker: 'sticker', video: 'video', audio: 'audio clip', document: 'document' } as const;

/**
 * A media message: ours and the customer's are fetched with the bearer into a blob URL (the
 * download needs it); images and stickers at once, the heavier kinds when asked. A media sent by
 * link is linked to (the dashboard's CSP loads no other origin).
 */
function MediaContent({ type, content }: { type: keyof typeof MEDIA_NAMES; content: Content | undefined }) {
  const mediaId = text(content, 'media_id');
  const link = text(content, 'link');
  const caption = text(content, 'caption');
  const filename = text(content, 'filename');
  const [wanted, setWanted] = useState(type === 'image' || type === 'sticker');
  const name = MEDIA_NAMES[type];
  let body;
  if (mediaId && wanted) body = <LoadedMedia type={type} mediaId={mediaId} alt={caption ?? filename ?? `Attached ${name}`} filename={filename} />;
  else if (mediaId) {
    body = <Button onClick={() => setWanted(true)}>{type === 'document' ? `Open ${filename ?? 'the document'}` : `Load the ${name}`}</Button>;
  } else if (link) {
    body = (
      <a href={link} target="_blank" rel="noreferrer noopener">
        Open the {name} ({hostOf(link)})
      </a>
    );
  } else body = <span className={styles.muted}>The {name} is not available.</span>;
  return (
    <div className={styles.media} data-testid="message-media">
      {body}
      {caption && <p className={styles.text}>{caption}</p>}
    </div>
  );
}

function LoadedMedia({ type, mediaId, alt, filename }: { type: keyof typeof MEDIA_NAMES; mediaId: string; alt: string; filename: string | undefined }) {
  const media = useMediaUrl(mediaId);
  if (media.pending) return <span className={styles.muted}>Loading the {MEDIA_NAMES[type]}…</span>;
  if (!media.url) {
    return (
      <span className={styles.muted}>
        {media.error} <Button onClick={media.retry}>Try again</Button>
      </span>
    );
  }
  if (type === 'image' || type === 'sticker') return <img src={media.url} alt={alt} className={styles.image} />;
  if (type === 'video') return <video src={media.url} controls className={styles.image} aria-label={alt} />;
  if (type === 'audio') return <audio src={media.url} controls aria-label={alt} />;
  return (
    <a href={media.url} download={filename ?? mediaId}>
      Download {filename ?? 'the document'}
    </a>
  );
}
