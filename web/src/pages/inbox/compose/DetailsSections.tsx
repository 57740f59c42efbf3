import { useInfiniteQuery, useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent, type ReactNode } from 'react';
import { queryKeys } from '../../../api/keys.ts';
import type { ListPage } from '../../../api/types.ts';
import { useApi, usePermissions, useSignedIn } from '../../../auth/SessionContext.tsx';
import { Button, ErrorMessage, errorFor, Loading, TextField } from '../../../ui/controls.tsx';
import styles from './compose.module.css';
import { useConversationWrite } from './conversation-writes.ts';
import { clockTime, dateTime } from './format.ts';
import { useLock, useLockActions } from './lock.ts';
import { heldUntil } from './LockNotices.tsx';
import { memberLabel, useMemberName, useMembers } from './members.ts';
import { tagProblem } from './tags.ts';
import type { Conversation, Note } from './types.ts';

export function Section({ title, children }: { title: string; children: ReactNode }) {
  const id = useId();
  return (
    <section className={styles.section} aria-labelledby={id}>
      <h2 id={id} className={styles.sectionTitle}>
        {title}
      </h2>
      {children}
    </section>
  );
}

export function AssigneeSection({ conversation }: { conversation: Conversation }) {
  const api = useApi();
  const { converse } = usePermissions();
  const me = useSignedIn().member.id;
  const nameOf = useMemberName();
  const members = useMembers().data;
  const selectId = useId();
  const assign = useConversationWrite(conversation, (memberId: string | null) =>
    api.post<Conversation>(`/v1/conversations/${conversation.id}/assign`, { member_id: memberId }),
  );
  const assignee = conversation.assignee_id;
  return (
    <Section title="Assignee">
      <p>{assignee ? nameOf(assignee) : 'Unassigned'}</p>
      {converse && (
        <div className={styles.row}>
          {/* The member list is readable by owners and admins only; others assign themselves. */}
          {members && (
            <>
              <label htmlFor={selectId} className="visually-hidden">
                Assign to
              </label>
              <select
                id={selectId}
                className={styles.select}
                value={assignee ?? ''}
                disabled={assign.isPending}
                onChange={(event) => assign.mutate(event.target.value || null)}
              >
                <option value="">Unassigned</option>
                {members.map((member) => (
                  <option key={member.id} value={member.id}>
                    {memberLabel(member)}
                    {member.id === me ? ' (you)' : ''}
                  </option>
                ))}
              </select>
            </>
          )}
          {assignee !== me && (
            <Button onClick={() => assign.mutate(me)} disabled={assign.isPending}>
              Assign to me
            </Button>
          )}
          {assignee && (
            <Button onClick={() => assign.mutate(null)} disabled={assign.isPending}>
              Unassign
            </Button>
          )}
        </div>
      )}
      <ErrorMessage error={assign.error} />
    </Section>
  );
}

export function TagsSection({ conversation }: { conversation: Conversation }) {
  const api = useApi();
  const { converse } = usePermissions();
  const [candidate, setCandidate] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const add = useConversationWrite(conversation, (tag: string) => api.post<Conversation>(`/v1/conversations/${conversation.id}/tags`, { tags: [tag] }));
  const remove = useConversationWrite(conversation, (tag: string) =>
    api.delete<Conversation>(`/v1/conversations/${conversation.id}/tags/${encodeURIComponent(tag)}`),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const tag = candidate.trim();
    const found = tagProblem(tag, conversation.tags);
    setProblem(found);
    if (found) return;
    add.mutate(tag, { onSuccess: () => setCandidate('') });
  };
  return (
    <Section title="Tags">
      {conversation.tags.length === 0 ? (
        <p className={styles.muted}>No tags.</p>
      ) : (
        <ul className={styles.tags} aria-label="Tags">
          {conversation.tags.map((tag) => (
            <li key={tag} className={styles.tag}>
              {tag}
              {converse && (
                <button
                  type="button"
                  className={styles.chipClose}
                  aria-label={`Remove tag ${tag}`}
                  disabled={remove.isPending}
                  onClick={() => remove.mutate(tag)}
                >
                  ×
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {converse && (
        <form className={styles.inlineForm} onSubmit={submit} noValidate>
          <TextField
            label="New tag"
            value={candidate}
            maxLength={50}
            placeholder="billing:late"
            error={problem ?? errorFor(add.error, '/tags/0') ?? errorFor(add.error, '/tags')}
            onChange={(event) => {
              setCandidate(event.target.value);
              setProblem(null);
            }}
          />
          <Button type="submit" disabled={add.isPending}>
            Add tag
          </Button>
        </form>
      )}
      {!errorFor(add.error, '/tags/0') && !errorFor(add.error, '/tags') && <ErrorMessage error={add.error} />}
      <ErrorMessage error={remove.error} />
    </Section>
  );
}

/** The lock as the panel shows it: who is replying, until when, and the handover either way. */
export function LockSection({ conversation }: { conversation: Conversation }) {
  const { converse } = usePermissions();
  const me = useSignedIn().member.id;
  const nameOf = useMemberName();
  const { query, lock, heldByMe, heldByOther } = useLock(conversation.id);
  const { request, transfer, release } = useLockActions(conversation.id);
  const ask = lock?.handover_request ?? null;
  let text: string;
  if (query.isPending) text = 'Checking…';
  else if (!lock) text = 'Nobody is replying right now. Typing a reply takes the lock, so that no one else sends at the same time.';
  else text = `${nameOf(lock.holder.member_id)} ${heldByMe ? 'are' : 'is'} replying (${heldUntil(lock)}).`;
  return (
    <Section title="Reply lock">
      <p>{text}</p>
      {ask && lock && (
        <p className={styles.muted}>
          {ask.member_id === me ? 'You' : nameOf(ask.member_id)} asked for a handover at {clockTime(ask.requested_at)}
          {ask.message ? `: “${ask.message}”` : '.'}
        </p>
      )}
      {converse && lock && (
        <div className={styles.row}>
          {heldByOther && (
            <Button onClick={() => request.mutate()} disabled={request.isPending}>
              Request handover
            </Button>
          )}
          {heldByMe && ask && (
            <Button variant="primary" onClick={() => transfer.mutate(ask.member_id)} disabled={transfer.isPending}>
              Hand over to {nameOf(ask.member_id)}
            </Button>
          )}
          {heldByMe && (
            <Button onClick={() => release.mutate()} disabled={release.isPending}>
              Release lock
            </Button>
          )}
        </div>
      )}
      <ErrorMessage error={query.error ?? request.error ?? transfer.error ?? release.error} />
    </Section>
  );
}

export function NotesSection({ conversation }: { conversation: Conversation }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const { converse } = usePermissions();
  const nameOf = useMemberName();
  const [body, setBody] = useState('');
  const bodyId = useId();
  const notes = useInfiniteQuery({
    queryKey: queryKeys.notes(conversation.id),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) => api.get<ListPage<Note>>(`/v1/conversations/${conversation.id}/notes`, { query: { limit: 20, after: pageParam } }),
    getNextPageParam: (page) => (page.has_more && page.next_cursor ? page.next_cursor : undefined),
  });
  const add = useMutation({
    mutationFn: (text: string) => api.post<Note>(`/v1/conversations/${conversation.id}/notes`, { body: text }),
    onSuccess: async () => {
      setBody('');
      await queryClient.invalidateQueries({ queryKey: queryKeys.notes(conversation.id) });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (body.trim()) add.mutate(body.trim());
  };
  const all = notes.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <Section title="Internal notes">
      <p className={styles.muted}>For your team only: never sent to the customer.</p>
      {converse && (
        <form className={styles.stack} onSubmit={submit}>
          <label htmlFor={bodyId} className={styles.label}>
            New note
          </label>
          <textarea id={bodyId} className={styles.noteInput} rows={2} maxLength={4000} value={body} onChange={(event) => setBody(event.target.value)} />
          <div className={styles.row}>
            <Button type="submit" disabled={add.isPending || body.trim() === ''}>
              Add note
            </Button>
          </div>
          <ErrorMessage error={add.error} />
        </form>
      )}
      {notes.isPending ? (
        <Loading label="Loading notes…" />
      ) : notes.error ? (
        <ErrorMessage error={notes.error} />
      ) : all.length === 0 ? (
        <p className={styles.muted}>No notes yet.</p>
      ) : (
        <ol className={styles.notes} aria-label="Notes">
          {all.map((note) => (
            <li key={note.id} className={styles.note}>
              <p className={styles.noteBody}>{note.body}</p>
              <p className={styles.muted}>
                {note.author.member_id ? nameOf(note.author.member_id) : 'An integration'} · <time dateTime={note.created_at}>{dateTime(note.created_at)}</time>
              </p>
            </li>
          ))}
        </ol>
      )}
      {notes.hasNextPage && (
        <Button onClick={() => void notes.fetchNextPage()} disabled={notes.isFetchingNextPage}>
          Show older notes
        </Button>
      )}
    </Section>
  );
}
