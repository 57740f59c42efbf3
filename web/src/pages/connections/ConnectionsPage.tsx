import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { sendAsCustomer } from '../../api/sandbox.ts';
import type { Connection } from '../../api/types.ts';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { Button, Empty, ErrorMessage, Loading, TextField } from '../../ui/controls.tsx';
import { connectionLabel, connectionsQueryKey, useConnections, useOnboardingUpdates, useSandbox } from './connections-data.ts';
import styles from './connections.module.css';
import { ImportProgress } from './ImportProgress.tsx';

export function ConnectionsPage() {
  const connections = useConnections();
  const permissions = usePermissions();
  const sandbox = useSandbox();
  useOnboardingUpdates();
  const live = connections.data?.filter((connection) => connection.status !== 'disconnected') ?? [];
  return (
    <div className={styles.page}>
      <h1>Connections</h1>
      {sandbox.data && permissions.administer && <ConnectSandboxNumber />}
      <section className={styles.section} aria-labelledby="connections-title">
        <h2 id="connections-title">Numbers</h2>
        {connections.isPending ? (
          <Loading />
        ) : connections.error ? (
          <ErrorMessage error={connections.error} />
        ) : live.length === 0 ? (
          <Empty>
            No number is connected yet.{' '}
            {sandbox.data ? (permissions.administer ? 'Connect a sandbox number above to try the inbox.' : 'Ask an owner or admin to connect one.') : null}
          </Empty>
        ) : (
          <table className={styles.table}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Number</th>
                <th scope="col">Status</th>
                <th scope="col">Quality</th>
                <th scope="col">Tier</th>
                <th scope="col">Throughput</th>
                <th scope="col">History import</th>
              </tr>
            </thead>
            <tbody>
              {live.map((connection) => (
                <tr key={connection.id}>
                  <td>
                    <Link to="/connections/$connectionId" params={{ connectionId: connection.id }}>
                      {connectionLabel(connection)}
                    </Link>
                    {connection.test && <span className={styles.badge}> test</span>}
                  </td>
                  <td>{connection.display_phone_number ?? connection.phone_number_id}</td>
                  <td>
                    <span className={`${styles.badge} ${connection.status === 'connected' ? styles.connected : ''}`}>
                      {connection.status.replace('_', ' ')}
                    </span>
                  </td>
                  <td>{connection.quality_rating ?? '—'}</td>
                  <td>{connection.messaging_limit_tier ?? '—'}</td>
                  <td>{connection.throughput_per_second}/s</td>
                  <td>
                    {connection.onboarding ? (
                      <ImportProgress onboarding={connection.onboarding} label={`History import of ${connectionLabel(connection)}`} compact />
                    ) : (
                      '—'
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {sandbox.data && live.length > 0 && permissions.converse && <WriteAsCustomer connections={live} />}
    </div>
  );
}

function ConnectSandboxNumber() {
  const api = useApi();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [test, setTest] = useState(true);
  const [coexistence, setCoexistence] = useState(false);
  const connect = useMutation({
    // The sandbox accepts any authorization code: this stands in for the provider's signup popup.
    // A code starting with `coexistence` makes a business app number, whose history it then imports.
    mutationFn: () =>
      api.post<Connection>('/v1/connections', {
        code: `${coexistence ? 'coexistence' : 'dashboard'}-${crypto.randomUUID()}`,
        test,
        coexistence,
        ...(name ? { name } : {}),
      }),
    onSuccess: async () => {
      setName('');
      await queryClient.invalidateQueries({ queryKey: connectionsQueryKey });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    connect.mutate();
  };
  return (
    <section className={styles.section} aria-labelledby="connect-title">
      <h2 id="connect-title">Connect a sandbox number</h2>
      <p>The service runs with the sandbox provider: a number connects at once, and you can write to it as a customer below.</p>
      <form className={styles.form} onSubmit={submit}>
        <TextField label="Connection name" placeholder="Support line" value={name} onChange={(e) => setName(e.target.value)} maxLength={100} />
        <label className={styles.checkbox}>
          <input type="checkbox" checked={test} onChange={(e) => setTest(e.target.checked)} /> Test connection (never counted as usage)
        </label>
        <label className={styles.checkbox}>
          <input type="checkbox" checked={coexistence} onChange={(e) => setCoexistence(e.target.checked)} /> Business app number (imports its chat history)
        </label>
        <Button type="submit" variant="primary" disabled={connect.isPending}>
          {connect.isPending ? 'Connecting…' : 'Connect number'}
        </Button>
      </form>
      <ErrorMessage error={connect.error} />
    </section>
  );
}

/** Plays the customer: the message arrives through the provider's webhook, like a real one. */
function WriteAsCustomer({ connections }: { connections: Connection[] }) {
  const [phoneNumberId, setPhoneNumberId] = useState(connections[0]?.phone_number_id ?? '');
  const [from, setFrom] = useState('15550001234');
  const [name, setName] = useState('Ada Customer');
  const [text, setText] = useState('Hello! I have a question about my order.');
  const write = useMutation({ mutationFn: () => sendAsCustomer({ phone_number_id: phoneNumberId, from, name, text }) });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    write.mutate();
  };
  return (
    <section className={styles.section} aria-labelledby="customer-title">
      <h2 id="customer-title">Write as a customer</h2>
      <form className={styles.form} onSubmit={submit}>
        <label className={styles.checkbox}>
          <span className="visually-hidden">To number</span>
          <select aria-label="To number" value={phoneNumberId} onChange={(e) => setPhoneNumberId(e.target.value)}>
            {connections.map((connection) => (
              <option key={connection.id} value={connection.phone_number_id}>
                {connection.name ?? connection.display_phone_number ?? connection.phone_number_id}
              </option>
            ))}
          </select>
        </label>
        <TextField label="Customer's number" inputMode="numeric" pattern="[0-9]{6,15}" value={from} onChange={(e) => setFrom(e.target.value)} />
        <TextField label="Customer's name" value={name} onChange={(e) => setName(e.target.value)} />
        <TextField label="Customer's message" required value={text} onChange={(e) => setText(e.target.value)} />
        <Button type="submit" disabled={write.isPending}>
          Send as customer
        </Button>
      </form>
      <ErrorMessage error={write.error} />
      {write.isSuccess && (
        <p role="status" className={styles.success}>
          Delivered to the service. <Link to="/inbox">Open the inbox</Link> to answer.
        </p>
      )}
    </section>
  );
}
