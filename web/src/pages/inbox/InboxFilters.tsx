import { useNavigate } from '@tanstack/react-router';
import { useEffect, useId, useState, type FormEvent } from 'react';
import { TAG_PATTERN } from '../../../../src/modules/conversations/tags.schemas.ts';
import { useSignedIn } from '../../auth/SessionContext.tsx';
import { memberLabel, useMembers } from './compose/members.ts';
import type { InboxSearch } from './search.ts';
import styles from './inbox.module.css';

const TAG = new RegExp(TAG_PATTERN);

/**
 * The list's filters, kept in the URL's search params (a filtered view can be linked, and survives
 * a reload). Any member can be picked as the assignee once the member list is readable; everyone
 * can pick themselves or nobody.
 */
export function InboxFilters({ search }: { search: InboxSearch }) {
  const navigate = useNavigate();
  const me = useSignedIn().member.id;
  const members = useMembers();
  const id = useId();
  const [tag, setTag] = useState(search.tag ?? '');
  const [tagError, setTagError] = useState<string | null>(null);
  // The URL changed under the field (back, forward, a link): the field follows.
  useEffect(() => setTag(search.tag ?? ''), [search.tag]);

  const set = (changes: Partial<InboxSearch>) =>
    void navigate({
      to: '.',
      search: (previous: InboxSearch) => {
        const next: Record<string, string> = {};
        for (const [key, value] of Object.entries({ ...previous, ...changes })) if (value) next[key] = value;
        return next;
      },
    });

  const applyTag = (event?: FormEvent) => {
    event?.preventDefault();
    const value = tag.trim().toLowerCase();
    if (value && !TAG.test(value)) {
      setTagError('Tags are 1 to 50 lowercase letters, digits, -, _ or :.');
      return;
    }
    setTagError(null);
    if (value !== (search.tag ?? '')) set({ tag: value || undefined });
  };

  const others = (members.data ?? []).filter((member) => member.id !== me);
  return (
    <form className={styles.filters} onSubmit={applyTag} aria-label="Filter conversations">
      <label htmlFor={`${id}-state`}>State</label>
      <select id={`${id}-state`} value={search.state ?? ''} onChange={(e) => set({ state: (e.target.value || undefined) as InboxSearch['state'] })}>
        <option value="">Any</option>
        <option value="open">Open</option>
        <option value="pending">Pending</option>
        <option value="closed">Closed</option>
      </select>
      <label htmlFor={`${id}-assignee`}>Assignee</label>
      <select id={`${id}-assignee`} value={search.assignee ?? ''} onChange={(e) => set({ assignee: e.target.value || undefined })}>
        <option value="">Anyone</option>
        <option value="me">Me</option>
        <option value="none">Unassigned</option>
        {others.map((member) => (
          <option key={member.id} value={member.id}>
            {memberLabel(member)}
          </option>
        ))}
        {search.assignee?.startsWith('mem_') && search.assignee !== me && !others.some((member) => member.id === search.assignee) && (
          <option value={search.assignee}>Another member</option>
        )}
      </select>
      <label htmlFor={`${id}-window`}>Window</label>
      <select id={`${id}-window`} value={search.window ?? ''} onChange={(e) => set({ window: (e.target.value || undefined) as InboxSearch['window'] })}>
        <option value="">Any</option>
        <option value="open">Open</option>
        <option value="closed">Closed</option>
      </select>
      <label htmlFor={`${id}-tag`}>Tag</label>
      <input
        id={`${id}-tag`}
        value={tag}
        placeholder="any tag"
        onChange={(e) => setTag(e.target.value)}
        onBlur={() => applyTag()}
        aria-invalid={tagError ? true : undefined}
        aria-describedby={tagError ? `${id}-tag-error` : undefined}
      />
      {tagError && (
        <span id={`${id}-tag-error`} className={styles.fieldError}>
          {tagError}
        </span>
      )}
    </form>
  );
}
