import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { ApiError } from '../../api/client.ts';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { Button, ErrorMessage, Loading, Notice, TextField } from '../../ui/controls.tsx';
import styles from './compose/compose.module.css';
import { dateTime } from './compose/format.ts';
import { lockOf, useLease, useLock } from './compose/lock.ts';
import { HandoverRequested, heldUntil, LockedByOther } from './compose/LockNotices.tsx';
import { setReplyTarget, useReplyTarget } from './compose/reply-store.ts';
import { mediaContent, takesCaption, uploadMedia, useSend, type Content } from './compose/sending.ts';
import { TemplatePicker } from './compose/TemplatePicker.tsx';
import type { Media } from './compose/types.ts';
import { closedWindowReason, useCustomerWindow, windowKey } from './compose/window.ts';
import type { Conversation } from './inbox-types.ts';

/** The reply composer of a conversation (text, media, templates when the window is closed, reply-to). */
export function Composer({ conversation }: { conversation: Conversation }) {
  const { converse } = usePermissions();
  // A viewer reads conversations and writes nothing: no composer at all.
  if (!converse) return <p className={styles.muted}>You can read this conversation; your role (viewer) cannot reply.</p>;
  // Keyed by conversation: a draft, an attachment and a lease never follow the member into another thread.
  return <ComposerFor key={conversation.id} conversation={conversation} />;
}

function ComposerFor({ conversation }: { conversation: Conversation }) {
  const customerWindow = useCustomerWindow(conversation);
  const replyTo = useReplyTarget(conversation.id);
  const { lock, heldByOther } = useLock(conversation.id);
  // Kept here, above the reply box: a send refused as outside the window turns the box into the
  // template picker, and the text typed must still be there if the customer writes again.
  const [draft, setDraft] = useState('');
  let body;
  if (customerWindow.isPending) body = <Loading label="Checking the 24-hour window…" />;
  else if (customerWindow.data && !customerWindow.data.open) {
    const reason = closedWindowReason(customerWindow.data, dateTime);
    body = (
      <div className={styles.stack}>
        <Notice>{reason} Only an approved template can reach the customer now.</Notice>
        {lock && heldByOther && <LockedByOther lock={lock} />}
        <ReplyChip conversationId={conversation.id} />
        <div className={styles.row}>
          <TemplatePicker
            conversation={conversation}
            reason={reason}
            triggerLabel="Choose a template"
            replyTo={replyTo?.messageId}
            onSent={() => setReplyTarget(conversation.id, null)}
          />
        </div>
      </div>
    );
  } else {
    // An error reading the window is no reason to stop a reply: the send is checked anyway.
    body = (
      <>
        {customerWindow.error && <ErrorMessage error={customerWindow.error} />}
        <FreeFormReply conversation={conversation} draft={draft} setDraft={setDraft} />
      </>
    );
  }
  return (
    <section className={styles.composer} aria-label="Reply">
      {body}
    </section>
  );
}

function ReplyChip({ conversationId }: { conversationId: string }) {
  const target = useReplyTarget(conversationId);
  if (!target) return null;
  return (
    <div className={styles.chip}>
      <span>Replying to {target.snippet}</span>
      <button type="button" className={styles.chipClose} aria-label="Cancel reply" onClick={() => setReplyTarget(conversationId, null)}>
        ×
      </button>
    </div>
  );
}

function FreeFormReply({ conversation, draft, setDraft }: { conversation: Conversation; draft: string; setDraft: (draft: string) => void }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const lease = useLease(conversation.id);
  const replyTo = useReplyTarget(conversation.id);
  const send = useSend(conversation);
  const [caption, setCaption] = useState('');
  const [attachment, setAttachment] = useState<{ name: string; media: Media | null } | null>(null);
  const upload = useMutation({
    mutationFn: (file: File) => uploadMedia(api, file),
    onSuccess: (media, file) => setAttachment({ name: file.name, media }),
    onError: () => setAttachment(null),
  });
  const textarea = useRef<HTMLTextAreaElement>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const draftId = useId();

  // Choosing "Reply" on a message brings the member here, ready to type.
  useEffect(() => {
    if (replyTo) textarea.current?.focus();
  }, [replyTo]);

  const refusal = send.error instanceof ApiError && send.error.code === 'conversation_locked' ? send.error : null;
  const blocked = lease.heldByOther;
  const media = attachment?.media ?? null;
  const canSend = !blocked && !send.isPending && !upload.isPending && (draft.trim() !== '' || media !== null);

  const submit = async () => {
    if (!canSend) return;
    const contents: Content[] = [];
    if (media) contents.push(mediaContent(media, caption));
    if (draft.trim()) contents.push({ type: 'text', text: { body: draft } });
    try {
      // The quote goes on the first message; a caption and a text go out as two messages, in order.
      for (const [index, content] of contents.entries()) {
        await send.mutateAsync(index === 0 && replyTo ? { ...content, reply_to: replyTo.messageId } : content);
        if (index === 0 && media) {
          setAttachment(null);
          setCaption('');
        }
      }
    } catch (error) {
      const lock = lockOf(error);
      if (lock) lease.refusedBy(lock);
      // The service's clock says the window closed: read it again, and the composer offers templates.
      if (error instanceof ApiError && error.code === 'window_closed') await queryClient.invalidateQueries({ queryKey: windowKey(conversation) });
      return;
    }
    setDraft('');
    setReplyTarget(conversation.id, null);
    lease.done();
    textarea.current?.focus();
  };

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    void submit();
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    // Enter sends, Shift+Enter is a new line; Enter that confirms an input method's composition is neither.
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void submit();
    }
  };

  return (
    <form className={styles.stack} onSubmit={onSubmit}>
      {lease.lock && lease.heldByOther && <LockedByOther lock={lease.lock} refusal={refusal} />}
      {lease.lock && lease.heldByMe && <HandoverRequested lock={lease.lock} />}
      <ReplyChip conversationId={conversation.id} />
      {attachment && (
        <div className={styles.attachment}>
          <span>
            {attachment.name}
            {media ? ` (${media.kind})` : ' (uploading…)'}
          </span>
          {media && takesCaption(media) && <TextField label="Caption" value={caption} maxLength={1024} onChange={(event) => setCaption(event.target.value)} />}
          <Button
            onClick={() => {
              setAttachment(null);
              setCaption('');
            }}
          >
            Remove attachment
          </Button>
        </div>
      )}
      <div className={styles.field}>
        <label htmlFor={draftId} className="visually-hidden">
          Message
        </label>
        <textarea
          id={draftId}
          ref={textarea}
          className={styles.draft}
          rows={3}
          maxLength={4096}
          placeholder={blocked ? 'Someone else is replying…' : 'Write a reply. Enter sends, Shift+Enter adds a line.'}
          value={draft}
          disabled={blocked}
          aria-describedby={lease.heldByMe && lease.lock ? `${draftId}-lock` : undefined}
          onChange={(event) => {
            setDraft(event.target.value);
            lease.typed();
          }}
          onKeyDown={onKeyDown}
          onFocus={lease.focused}
          onBlur={lease.left}
        />
        {lease.heldByMe && lease.lock && (
          <span id={`${draftId}-lock`} className={styles.muted}>
            You are replying: teammates cannot send here meanwhile ({heldUntil(lease.lock)}, renewed as you type).
          </span>
        )}
      </div>
      {!refusal && <ErrorMessage error={send.error} />}
      <ErrorMessage error={upload.error} />
      <div className={styles.row}>
        <Button type="submit" variant="primary" disabled={!canSend}>
          {send.isPending ? 'Sending…' : 'Send'}
        </Button>
        <Button onClick={() => fileInput.current?.click()} disabled={blocked || upload.isPending}>
          {upload.isPending ? 'Uploading…' : 'Attach a file'}
        </Button>
        <input
          ref={fileInput}
          type="file"
          hidden
          aria-label="File to attach"
          onChange={(event) => {
            const file = event.target.files?.[0];
            event.target.value = '';
            if (!file) return;
            setAttachment({ name: file.name, media: null });
            upload.mutate(file);
          }}
        />
        <TemplatePicker
          conversation={conversation}
          reason={null}
          triggerLabel="Send a template"
          replyTo={replyTo?.messageId}
          onSent={() => setReplyTarget(conversation.id, null)}
        />
      </div>
    </form>
  );
}
