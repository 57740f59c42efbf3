import { SelectField } from '../../ui/controls.tsx';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import { useState } from 'react';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { Badge, ConfirmButton, PagedList, tableClass, useCursorList } from '../../ui/admin.tsx';
import { fullTime } from '../inbox/format.ts';
import { CreateApiKey } from './CreateApiKey.tsx';
import { DevelopersPage } from './DevelopersPage.tsx';
import styles from './developers.module.css';
import { ScopeList } from './fields.tsx';
import { developerKeys } from './queries.ts';
import { RevealedSecret, type Revealed } from './RevealedSecret.tsx';
import type { ApiKey, ApiKeyWithSecret } from './types.ts';

type StatusFilter = 'active' | 'revoked' | 'all';

function ApiKeysPage() {
  const { administer } = usePermissions();
  const queryClient = useQueryClient();
  const [status, setStatus] = useState<StatusFilter>('active');
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const list = useCursorList<ApiKey>(developerKeys.apiKeyList(status), '/v1/api-keys', {
    status: status === 'all' ? undefined : status,
    expand: 'connection',
  });
  const created = (key: ApiKeyWithSecret) => {
    setRevealed({ title: 'Your new API key', label: key.name ? `API key “${key.name}”` : 'API key', value: key.key });
    void queryClient.invalidateQueries({ queryKey: developerKeys.apiKeys });
  };
  return (
    <DevelopersPage
      title="API keys"
      description="Keys let your own integrations call the API. Each key is shown once, when it is made; the service keeps only a hash of it."
      actions={administer && <CreateApiKey onCreated={created} />}
    >
      <RevealedSecret revealed={revealed} onDone={() => setRevealed(null)} />
      <div className={styles.filters}>
        <SelectField label="Show" value={status} onChange={(e) => setStatus(e.target.value as StatusFilter)}>
          <option value="active">Active keys</option>
          <option value="revoked">Revoked keys</option>
          <option value="all">All keys</option>
        </SelectField>
      </div>
      <PagedList
        list={list}
        empty={
          status === 'revoked'
            ? 'No key has been revoked.'
            : administer
              ? 'No API key yet. Create one with “New API key” to call the API from your own code.'
              : 'No API key yet. Owners and admins create them.'
        }
      >
        {(keys) => (
          <table className={tableClass}>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Reaches</th>
                <th scope="col">Mode</th>
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((key) => (
                <KeyRow key={key.id} apiKey={key} onRotated={setRevealed} />
              ))}
            </tbody>
          </table>
        )}
      </PagedList>
    </DevelopersPage>
  );
}

function KeyRow({ apiKey, onRotated }: { apiKey: ApiKey; onRotated: (revealed: Revealed) => void }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const { administer } = usePermissions();
  const refresh = () => queryClient.invalidateQueries({ queryKey: developerKeys.apiKeys });
  const revoke = useMutation({ mutationFn: () => api.post<ApiKey>(`/v1/api-keys/${apiKey.id}/revoke`), onSuccess: refresh });
  const rotate = useMutation({
    mutationFn: () => api.post<ApiKeyWithSecret>(`/v1/api-keys/${apiKey.id}/rotate`),
    onSuccess: async (replacement) => {
      onRotated({
        title: 'The replacement key',
        label: apiKey.name ? `API key “${apiKey.name}”` : 'API key',
        value: replacement.key,
        note: `${apiKey.redacted_key} was revoked at the same moment: requests made with it are refused from now on.`,
      });
      await refresh();
    },
  });
  const connection = apiKey.connection;
  const label = apiKey.name ?? apiKey.redacted_key;
  return (
    <tr>
      <td>
        {apiKey.name && <div>{apiKey.name}</div>}
        <code className={styles.code}>{apiKey.redacted_key}</code>
      </td>
      <td>
        {apiKey.kind === 'organization'
          ? 'Every number'
          : `Only ${connection?.name ?? connection?.display_phone_number ?? apiKey.connection_id ?? 'one number'}`}
      </td>
      <td>
        <Badge tone={apiKey.mode === 'live' ? 'good' : 'warn'}>{apiKey.mode}</Badge>
      </td>
      <td>
        <ScopeList scopes={apiKey.scopes} />
      </td>
      <td>{fullTime(apiKey.created_at)}</td>
      <td>
        {apiKey.status === 'active' ? (
          <Badge tone="good">active</Badge>
        ) : (
          <>
            <Badge tone="bad">revoked</Badge>
            {apiKey.revoked_at && <div className={styles.muted}>{fullTime(apiKey.revoked_at)}</div>}
            {apiKey.rotated_to && <div className={styles.muted}>replaced by rotation</div>}
          </>
        )}
      </td>
      <td>
        <div className={styles.rowActions}>
          <Link to="/developers/audit-log" search={{ target_id: apiKey.id }} aria-label={`History of ${label}`}>
            History
          </Link>
          {administer && apiKey.status === 'active' && (
            <>
              <ConfirmButton
                label="Rotate"
                title={`Rotate ${label}?`}
                consequence={`A new key with the same kind, mode, connection and scopes is made and shown once, and ${apiKey.redacted_key} is revoked at the same moment: there is no overlap, so every integration using it fails until it has the new key.`}
                confirmLabel="Rotate key"
                onConfirm={() => rotate.mutateAsync()}
              />
              <ConfirmButton
                label="Revoke"
                title={`Revoke ${label}?`}
                consequence={`${apiKey.redacted_key} stops working at once: every request made with it is refused (401). This cannot be undone; a new key would be needed.`}
                confirmLabel="Revoke key"
                onConfirm={() => revoke.mutateAsync()}
              />
            </>
          )}
        </div>
      </td>
    </tr>
  );
}

export const Route = createLazyRoute('/app/developers/api-keys')({ component: ApiKeysPage });
