import { useState } from 'react';
import type { ApiError } from '../../../api/client.ts';
import { useSignedIn } from '../../../auth/SessionContext.tsx';
import { Button, ErrorMessage } from '../../../ui/controls.tsx';
import styles from './compose.module.css';
import { clockTime } from './format.ts';
import { useLockActions } from './lock.ts';
import { useMemberName } from './members.ts';
import type { ConversationLock } from './types.ts';

/** "held until 14:05": when the lease lapses unless its holder renews it. */
export const heldUntil = (lock: ConversationLock) => `lock held until ${clockTime(lock.idle_expires_at)}`;

/**
 * Someone else is replying: who, until when, and the way to ask for the conversation. Shown in the
 * composer instead of a reply box; as an alert, with the error's reference page, when it explains a
 * send or a keystroke the API refused (`409 conversation_locked`).
 */
export function LockedByOther({ lock, refusal }: { lock: ConversationLock; refusal?: ApiError | null }) {
  const nameOf = useMemberName();
  const me = useSignedIn().member.id;
  const { request } = useLockActions(lock.conversation_id);
  const asked = lock.handover_request?.member_id === me ? lock.handover_request : null;
  return (
    <div className={styles.lockNotice} role={refusal ? 'alert' : 'status'}>
      <p>
        {nameOf(lock.holder.member_id)} is replying to this conversation ({heldUntil(lock)}).{' '}
        {asked
          ? `You asked for a handover at ${clockTime(asked.requested_at)}; they can hand it over, or it frees itself when they stop.`
          : 'Request a handover?'}
        {refusal && (
          <>
            {' '}
            <a href={refusal.body.doc_url} target="_blank" rel="noreferrer">
              ({refusal.code})
            </a>
          </>
        )}
      </p>
      <Button onClick={() => request.mutate()} disabled={request.isPending}>
        {asked ? 'Ask again' : 'Request handover'}
      </Button>
      <ErrorMessage error={request.error} />
    </div>
  );
}

/** The holder's side: a teammate asked for the conversation. Hand it over, or carry on. */
export function HandoverRequested({ lock }: { lock: ConversationLock }) {
  const nameOf = useMemberName();
  const { transfer } = useLockActions(lock.conversation_id);
  const [ignored, setIgnored] = useState<string | null>(null);
  const ask = lock.handover_request;
  if (!ask || ignored === ask.requested_at) return null;
  return (
    <div className={styles.lockNotice} role="alert">
      <p>
        {nameOf(ask.member_id)} asks to take over this conversation
        {ask.message ? `: “${ask.message}”` : '.'} Your draft stays here.
      </p>
      <div className={styles.row}>
        <Button variant="primary" onClick={() => transfer.mutate(ask.member_id)} disabled={transfer.isPending}>
          Hand over
        </Button>
        <Button onClick={() => setIgnored(ask.requested_at)}>Ignore</Button>
      </div>
      <ErrorMessage error={transfer.error} />
    </div>
  );
}
