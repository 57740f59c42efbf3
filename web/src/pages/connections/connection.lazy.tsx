import { useMutation, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import type { Connection } from '../../api/types.ts';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage, Badge, ConfirmButton, Section } from '../../ui/admin.tsx';
import { Button, ErrorMessage, Loading, Notice, TextField } from '../../ui/controls.tsx';
import { connectionLabel, connectionsQueryKey, mintSandboxCode, storeConnection, useConnection, useOnboardingUpdates, useSandbox } from './connections-data.ts';
import styles from './connections.module.css';
import { ImportProgress } from './ImportProgress.tsx';

const QUALITY_TONE = { green: 'good', yellow: 'warn', red: 'bad', unknown: undefined } as const;
const STATUS_TONE = { connected: 'good', needs_reauth: 'warn', disconnected: 'bad' } as const;

function when(timestamp: string | null): string {
  return timestamp ? new Date(timestamp).toLocaleString() : '—';
}

/** One number: its state at the provider, its history import, and what an owner or admin can do with it. */
function ConnectionPage() {
  const { connectionId } = Route.useParams();
  const connection = useConnection(connectionId);
  const permissions = usePermissions();
  useOnboardingUpdates();
  if (connection.isPending) return <Loading />;
  if (connection.error) {
    return (
      <AdminPage title="Connection" description={<Link to="/connections">All connections</Link>}>
        <ErrorMessage error={connection.error} />
      </AdminPage>
    );
  }
  const current = connection.data;
  const writable = permissions.can('connections:write') && current.status !== 'disconnected';
  return (
    <AdminPage title={connectionLabel(current)} description={<Link to="/connections">All connections</Link>}>
      {current.status === 'needs_reauth' && (
        <Notice>The provider no longer accepts this connection&apos;s token: nothing can be sent or synced until it is re-authorised.</Notice>
      )}
      <Section title="Number">
        <dl className={styles.details}>
          <dt>Status</dt>
          <dd>
            <Badge tone={STATUS_TONE[current.status]}>{current.status.replace('_', ' ')}</Badge>
          </dd>
          <dt>Number</dt>
          <dd>{current.display_phone_number ?? current.phone_number_id}</dd>
          <dt>Verified name</dt>
          <dd>{current.verified_name ?? '—'}</dd>
          <dt>Quality</dt>
          <dd>{current.quality_rating ? <Badge tone={QUALITY_TONE[current.quality_rating]}>{current.quality_rating}</Badge> : '—'}</dd>
          <dt>Messaging tier</dt>
          <dd>{current.messaging_limit_tier ?? '—'}</dd>
          <dt>Throughput</dt>
          <dd>{current.throughput_per_second} messages per second</dd>
          <dt>Mode</dt>
          <dd>{current.test ? 'Test (never counted as usage)' : 'Live'}</dd>
          <dt>Business app</dt>
          <dd>{current.coexistence ? 'Also used from the WhatsApp Business app (coexistence)' : 'No'}</dd>
          <dt>Connected</dt>
          <dd>{when(current.connected_at)}</dd>
          {current.disconnected_at && (
            <>
              <dt>Disconnected</dt>
              <dd>{when(current.disconnected_at)}</dd>
            </>
          )}
          <dt>Provider ids</dt>
          <dd>
            <code>{current.phone_number_id}</code> (account <code>{current.waba_id}</code>)
          </dd>
        </dl>
      </Section>
      {current.onboarding && (
        <Section title="Chat history import">
          <p>The business app shares its chats once, in chunks; the bar follows the provider&apos;s own progress as they arrive.</p>
          <ImportProgress onboarding={current.onboarding} />
        </Section>
      )}
      {writable && <ConnectionActions connection={current} />}
    </AdminPage>
  );
}

function ConnectionActions({ connection }: { connection: Connection }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const path = `/v1/connections/${encodeURIComponent(connection.id)}`;
  const stored = (answer: Connection) => storeConnection(queryClient, answer);
  const sync = useMutation({
    mutationFn: () => api.post<Connection>(`${path}/sync`),
    onSuccess: stored,
    // A refused token turns the connection needs_reauth: show that state.
    onError: () => queryClient.invalidateQueries({ queryKey: connectionsQueryKey }),
  });
  const disconnect = async () => {
    stored(await api.delete<Connection>(path));
    await queryClient.invalidateQueries({ queryKey: connectionsQueryKey });
  };
  const importing = connection.onboarding && (connection.onboarding.status === 'pending' || connection.onboarding.status === 'importing');
  return (
    <Section title="Actions">
      <div className={styles.actions}>
        <div className={styles.action}>
          <p>Read the number&apos;s quality, tier and throughput from the provider again, and every template of its account.</p>
          <Button onClick={() => sync.mutate()} disabled={sync.isPending}>
            {sync.isPending ? 'Syncing…' : 'Sync with the provider'}
          </Button>
        </div>
        <ErrorMessage error={sync.error} />
        {sync.isSuccess && (
          <p role="status" className={styles.success}>
            Synced: quality {sync.data.quality_rating ?? 'unknown'}, tier {sync.data.messaging_limit_tier ?? 'not set'}.
          </p>
        )}
        <Reauthorise connection={connection} onDone={stored} />
        <div className={styles.action}>
          <p>Stop serving this number. Its conversations and messages stay readable.</p>
          <ConfirmButton
            label="Disconnect"
            title={`Disconnect ${connectionLabel(connection)}?`}
            consequence={
              <>
                The service unsubscribes from the number&apos;s account at the provider and erases its token. From then on nothing is sent from{' '}
                {connection.display_phone_number ?? 'it'} (sends are refused with <code>connection_inactive</code>) and customers&apos; messages to it no longer
                arrive.{importing ? ' The unfinished history import is cancelled.' : ''} Its conversations and messages are kept. You can connect the number
                again later.
              </>
            }
            confirmLabel="Disconnect the number"
            onConfirm={disconnect}
          />
        </div>
      </div>
    </Section>
  );
}

/**
 * A new code for the same account: with the sandbox, minted by its control API (the stand-in for the
 * provider's signup popup); otherwise the code Embedded Signup handed over, pasted.
 */
function Reauthorise({ connection, onDone }: { connection: Connection; onDone: (connection: Connection) => void }) {
  const api = useApi();
  const sandbox = useSandbox();
  const [code, setCode] = useState('');
  const reauthorise = useMutation({
    mutationFn: async () => {
      const granted = sandbox.data ? await mintSandboxCode(connection.phone_number_id) : code;
      return api.post<Connection>(`/v1/connections/${encodeURIComponent(connection.id)}/reauthorise`, { code: granted });
    },
    onSuccess: (answer) => {
      setCode('');
      onDone(answer);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    reauthorise.mutate();
  };
  return (
    <>
      <form className={styles.action} onSubmit={submit}>
        <p>
          {sandbox.data
            ? 'Grant the service a new token for this number (the sandbox issues a fresh code, as the signup popup would).'
            : 'Grant the service a new token for this number with a new code from the provider’s signup.'}
        </p>
        {!sandbox.data && <TextField label="Authorization code" required value={code} onChange={(e) => setCode(e.target.value)} />}
        <Button type="submit" variant={connection.status === 'needs_reauth' ? 'primary' : undefined} disabled={reauthorise.isPending}>
          {reauthorise.isPending ? 'Re-authorising…' : 'Re-authorise'}
        </Button>
      </form>
      <ErrorMessage error={reauthorise.error} />
      {reauthorise.isSuccess && (
        <p role="status" className={styles.success}>
          Re-authorised: the number is connected again.
        </p>
      )}
    </>
  );
}

export const Route = createLazyRoute('/app/connections/$connectionId')({ component: ConnectionPage });
