import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import type { ListPage } from '../../api/types.ts';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage, Badge, ConfirmButton, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { Button, errorFor, ErrorMessage, FilterSelect, Loading, SelectField, TextField } from '../../ui/controls.tsx';
import { useConnections } from '../connections/connections-data.ts';
import { connectorKeys, formatTime, toneOf, words, type Connector, type ConnectorAccount, type ConnectorField } from './api.ts';
import { useRunsOn } from './connections.ts';
import { Problems } from './JsonField.tsx';
import styles from './automations.module.css';

const STATUSES = ['active', 'needs_reauth', 'error', 'revoked'] as const satisfies readonly ConnectorAccount['status'][];

function ConnectorAccountsPage() {
  const api = useApi();
  const queryClient = useQueryClient();
  const runsOn = useRunsOn();
  const writable = usePermissions().can('connectors:write');
  const [adding, setAdding] = useState(false);
  const [status, setStatus] = useState('');
  const catalogue = useQuery({
    queryKey: connectorKeys.catalogue,
    queryFn: async () => (await api.get<ListPage<Connector>>('/v1/connectors')).data,
    staleTime: Infinity,
  });
  const list = useCursorList<ConnectorAccount>(connectorKeys.accountList({ status }), '/v1/connector-accounts', { status: status || undefined });
  const disconnect = async (account: ConnectorAccount) => {
    await api.delete<ConnectorAccount>(`/v1/connector-accounts/${account.id}`);
    await queryClient.invalidateQueries({ queryKey: connectorKeys.accounts });
  };
  const connectorName = (id: string) => catalogue.data?.find((connector) => connector.id === id)?.name ?? id;
  return (
    <AdminPage
      title="Connector accounts"
      description="Credentials for other systems that automations' http_request steps call through. Secrets are sealed when saved and never shown again."
      actions={
        writable &&
        !adding && (
          <Button variant="primary" onClick={() => setAdding(true)}>
            Connect an account
          </Button>
        )
      }
    >
      {adding &&
        (catalogue.data ? (
          <ConnectAccount catalogue={catalogue.data} onClose={() => setAdding(false)} />
        ) : catalogue.error ? (
          <ErrorMessage error={catalogue.error} />
        ) : (
          <Loading />
        ))}
      <Section title="Accounts" actions={<FilterSelect label="Status" value={status} options={STATUSES} optionLabel={words} onChange={setStatus} />}>
        <PagedList
          list={list}
          empty={
            status
              ? `No ${words(status)} accounts.`
              : writable
                ? 'No connector account yet. Connect one to let an automation call another system (“Connect an account”).'
                : 'No connector account yet. An owner or admin can connect one.'
          }
        >
          {(accounts) => (
            <table className={tableClass}>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Connector</th>
                  <th scope="col">Status</th>
                  <th scope="col">Calls go to</th>
                  <th scope="col">Secret</th>
                  <th scope="col">Used by</th>
                  <th scope="col">Verified</th>
                  {writable && <th scope="col">Disconnect</th>}
                </tr>
              </thead>
              <tbody>
                {accounts.map((account) => (
                  <tr key={account.id}>
                    <td>
                      {account.name}
                      <div className={styles.muted}>{account.id}</div>
                    </td>
                    <td>{connectorName(account.connector)}</td>
                    <td>
                      <Badge tone={toneOf(account.status)}>{words(account.status)}</Badge>
                      {account.last_error && <div className={styles.muted}>{account.last_error}</div>}
                    </td>
                    <td>
                      {account.base_url}
                      <div className={styles.muted}>hosts: {account.allowed_hosts.join(', ')}</div>
                    </td>
                    <td>{account.secret_hint ?? '—'}</td>
                    <td>{runsOn(account.connection_id, account.mode)} automations</td>
                    <td>{formatTime(account.last_verified_at)}</td>
                    {writable && (
                      <td>
                        {account.status !== 'revoked' && (
                          <ConfirmButton
                            label={`Disconnect ${account.name}`}
                            title={`Disconnect ${account.name}?`}
                            consequence="Its stored secrets are wiped and it becomes revoked; it stays listed for the runs that name it. Deploys that use it are refused from now on, and a run reaching a step that calls through it fails that step. This cannot be undone: connect a new account instead."
                            confirmLabel="Disconnect"
                            onConfirm={() => disconnect(account)}
                          />
                        )}
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </PagedList>
      </Section>
    </AdminPage>
  );
}

/** The catalogue's prose, whose `code` spans are marked with backticks. */
function Prose({ text }: { text: string }) {
  return text.split('`').map((part, index) => (index % 2 === 1 ? <code key={index}>{part}</code> : part));
}

/** One of a connector's fields: a secret is typed into a password box and never shown back. */
function FieldInput({ field, value, onChange, error }: { field: ConnectorField; value: string; onChange: (value: string) => void; error: string | null }) {
  const label = field.label + (field.required ? '' : ' (optional)');
  if (field.type === 'select') {
    return (
      <SelectField label={label} value={value} required={field.required} error={error} onChange={(e) => onChange(e.target.value)}>
        {(field.options ?? []).map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </SelectField>
    );
  }
  return (
    <TextField
      label={label}
      type={field.type === 'secret' ? 'password' : 'text'}
      autoComplete={field.type === 'secret' ? 'new-password' : 'off'}
      required={field.required}
      value={value}
      onChange={(e) => onChange(e.target.value)}
      error={error}
      placeholder={field.default}
      hint={field.type === 'secret' ? 'Sealed when saved; only its last four characters are shown afterwards.' : undefined}
    />
  );
}

/** Connecting sends the connector's test request: only an account whose system answered 2xx is stored. */
function ConnectAccount({ catalogue, onClose }: { catalogue: Connector[]; onClose: () => void }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const connections = useConnections();
  const [connectorId, setConnectorId] = useState<string>(catalogue[0]?.id ?? '');
  const [name, setName] = useState('');
  const [where, setWhere] = useState('live');
  const [fields, setFields] = useState<Record<string, string>>({});
  const connector = catalogue.find((candidate) => candidate.id === connectorId);
  const connect = useMutation({
    mutationFn: (body: Record<string, unknown>) => api.post<ConnectorAccount>('/v1/connector-accounts', body),
    onSuccess: async () => {
      onClose();
      await queryClient.invalidateQueries({ queryKey: connectorKeys.accounts });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!connector) return;
    // Empty optional fields are left out, so the connector's defaults apply.
    const given: Record<string, string> = {};
    for (const field of connector.fields) if (fields[field.name]) given[field.name] = fields[field.name]!;
    connect.mutate({
      connector: connector.id,
      name,
      fields: given,
      ...(where === 'live' || where === 'test' ? { mode: where } : { connection_id: where }),
    });
  };
  return (
    <Section title="Connect an account">
      <form className={styles.form} onSubmit={submit} autoComplete="off">
        <SelectField
          label="Connector"
          value={connectorId}
          onChange={(e) => {
            setConnectorId(e.target.value);
            setFields({});
          }}
        >
          {catalogue.map((candidate) => (
            <option key={candidate.id} value={candidate.id}>
              {candidate.name}
            </option>
          ))}
        </SelectField>
        {connector && (
          <p className={styles.muted}>
            <Prose text={connector.description} /> Connecting sends {connector.test_request.method} to the base URL
            {connector.fields.some((f) => f.name === 'test_path') ? ' plus the test path' : ''}: it must answer 2xx, or nothing is stored. Calls may go to{' '}
            {connector.allowed_hosts} only.
          </p>
        )}
        <TextField
          label="Account name"
          required
          maxLength={200}
          value={name}
          onChange={(e) => setName(e.target.value)}
          error={errorFor(connect.error, '/name')}
        />
        {connector?.fields.map((field) => (
          <FieldInput
            key={`${connector.id}-${field.name}`}
            field={field}
            value={fields[field.name] ?? (field.type === 'select' ? (field.default ?? field.options?.[0] ?? '') : '')}
            onChange={(value) => setFields((current) => ({ ...current, [field.name]: value }))}
            error={errorFor(connect.error, `/fields/${field.name}`)}
          />
        ))}
        <SelectField label="Used by" value={where} onChange={(e) => setWhere(e.target.value)}>
          <option value="live">Live automations</option>
          <option value="test">Test automations</option>
          {(connections.data ?? [])
            .filter((connection) => connection.status !== 'disconnected')
            .map((connection) => (
              <option key={connection.id} value={connection.id}>
                Only automations of {connection.name ?? connection.display_phone_number ?? connection.id}
              </option>
            ))}
        </SelectField>
        <ErrorMessage error={connect.error} />
        <Problems error={connect.error} />
        <div className={styles.formActions}>
          <Button onClick={onClose} disabled={connect.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="primary" disabled={connect.isPending || !connector}>
            {connect.isPending ? 'Testing and connecting…' : 'Connect'}
          </Button>
        </div>
      </form>
    </Section>
  );
}

export const Route = createLazyRoute('/app/connectors')({ component: ConnectorAccountsPage });
