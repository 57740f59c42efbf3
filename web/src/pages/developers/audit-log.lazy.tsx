import { createLazyRoute, useNavigate } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { Button, TextField } from '../../ui/controls.tsx';
import { PagedList, tableClass, useCursorList } from '../../ui/admin.tsx';
import { useMemberName } from '../inbox/compose/members.ts';
import { fullTime } from '../inbox/format.ts';
import { DevelopersPage } from './DevelopersPage.tsx';
import styles from './developers.module.css';
import { developerKeys } from './queries.ts';
import type { AuditLogSearch } from './search.ts';
import type { AuditEntry } from './types.ts';

function AuditLogPage() {
  const search = Route.useSearch();
  const list = useCursorList<AuditEntry>(developerKeys.auditLog(search), '/v1/events', { action: search.action, target_id: search.target_id });
  const filtered = Boolean(search.action || search.target_id);
  // The API publishes no catalogue of actions: offer those seen so far, and any can be typed.
  const seen = [...new Set(list.items.map((entry) => entry.action))].sort();
  return (
    <DevelopersPage
      title="Audit log"
      description="Every change made to the organization through the API or the dashboard: who made it, with which credential, and when. Newest first."
    >
      <Filters key={`${search.action ?? ''}|${search.target_id ?? ''}`} search={search} actions={seen} />
      <PagedList
        list={list}
        empty={
          filtered
            ? 'No entry matches these filters. Clear them to see every entry.'
            : 'Nothing is recorded yet: changes to members, keys, webhooks and connections appear here.'
        }
      >
        {(entries) => (
          <table className={tableClass}>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((entry) => (
                <EntryRow key={entry.id} entry={entry} search={search} />
              ))}
            </tbody>
          </table>
        )}
      </PagedList>
    </DevelopersPage>
  );
}

/** The API's two filters, applied to the URL (so a filtered view is a link) when the form is sent. */
function Filters({ search, actions }: { search: AuditLogSearch; actions: string[] }) {
  const navigate = useNavigate();
  const [action, setAction] = useState(search.action ?? '');
  const [target, setTarget] = useState(search.target_id ?? '');
  const apply = (next: AuditLogSearch) => void navigate({ to: '/developers/audit-log', search: next });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    apply({ action: action.trim() || undefined, target_id: target.trim() || undefined });
  };
  return (
    <form className={styles.filters} onSubmit={submit} aria-label="Filters">
      <TextField label="Action" placeholder="api_key.created" list="audit-actions" value={action} onChange={(e) => setAction(e.target.value)} maxLength={100} />
      <datalist id="audit-actions">
        {actions.map((each) => (
          <option key={each} value={each} />
        ))}
      </datalist>
      <TextField label="Target id" placeholder="key_…" value={target} onChange={(e) => setTarget(e.target.value)} maxLength={64} />
      <Button type="submit">Filter</Button>
      {(search.action || search.target_id) && <Button onClick={() => apply({})}>Clear filters</Button>}
    </form>
  );
}

function EntryRow({ entry, search }: { entry: AuditEntry; search: AuditLogSearch }) {
  const navigate = useNavigate();
  const filter = (next: AuditLogSearch) => void navigate({ to: '/developers/audit-log', search: { ...search, ...next } });
  const details = Object.entries(entry.data);
  return (
    <tr>
      <td className={styles.nowrap}>{fullTime(entry.created_at)}</td>
      <td>
        <Actor entry={entry} />
      </td>
      <td>
        <button
          type="button"
          className={`${styles.linkButton} ${styles.nowrap}`}
          onClick={() => filter({ action: entry.action })}
          aria-label={`Show only ${entry.action}`}
        >
          {entry.action}
        </button>
      </td>
      <td>
        <div>{entry.target.type.replace(/_/g, ' ')}</div>
        <button
          type="button"
          className={styles.linkButton}
          onClick={() => filter({ target_id: entry.target.id })}
          aria-label={`Show only entries about ${entry.target.id}`}
        >
          {entry.target.id}
        </button>
      </td>
      <td>
        {details.length > 0 && (
          <dl className={`${styles.dl} ${styles.details}`}>
            {details.map(([name, value]) => (
              <DetailLine key={name} name={name} value={value} />
            ))}
          </dl>
        )}
        {entry.request_id && <div className={styles.muted}>request {entry.request_id}</div>}
      </td>
    </tr>
  );
}

function DetailLine({ name, value }: { name: string; value: unknown }) {
  const text = typeof value === 'string' ? value : Array.isArray(value) ? value.map(String).join(', ') : JSON.stringify(value);
  return (
    <>
      <dt>{name.replace(/_/g, ' ')}</dt>
      <dd className={styles.code}>{text}</dd>
    </>
  );
}

/** Who made the change: a member by name, a key or an app, or the service itself. */
function Actor({ entry }: { entry: AuditEntry }) {
  const memberName = useMemberName();
  const { actor } = entry;
  switch (actor.type) {
    case 'member':
      return <>{memberName(actor.id)}</>;
    case 'api_key':
      return (
        <>
          API key <span className={styles.code}>{actor.id}</span>
        </>
      );
    case 'oauth_token':
      return <>App “{entry.oauth_client?.name ?? 'unknown'}”</>;
    case 'system':
      return <>The service</>;
  }
}

export const Route = createLazyRoute('/app/developers/audit-log')({ component: AuditLogPage });
