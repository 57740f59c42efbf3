import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link, useNavigate } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { ConfirmButton, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { Button, errorFor, ErrorMessage, Loading, Notice, SelectField, TextField } from '../../ui/controls.tsx';
import { fullTime } from '../inbox/format.ts';
import { DevelopersPage } from './DevelopersPage.tsx';
import styles from './developers.module.css';
import { developerKeys } from './queries.ts';
import { RevealedSecret, type Revealed } from './RevealedSecret.tsx';
import type { RotatedSecret, UpdateWebhookEndpointInput, WebhookDelivery, WebhookEndpoint, WebhookTest } from './types.ts';
import { DeliveryOutcome, disabledReason, duration, EndpointStatus, EventPicker, eventsSummary, useConnectionName } from './webhook-parts.tsx';

function WebhookEndpointPage() {
  const { endpointId } = Route.useParams();
  const api = useApi();
  const { can } = usePermissions();
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const endpoint = useQuery({
    queryKey: developerKeys.webhookEndpoint(endpointId),
    queryFn: ({ signal }) => api.get<WebhookEndpoint>(`/v1/webhook-endpoints/${endpointId}`, { signal }),
  });
  const back = <Link to="/developers/webhooks">← All endpoints</Link>;
  if (!endpoint.data) {
    return (
      <DevelopersPage title="Webhook endpoint" actions={back}>
        {endpoint.error ? <ErrorMessage error={endpoint.error} /> : <Loading />}
      </DevelopersPage>
    );
  }
  const writable = can('webhooks:write');
  return (
    <DevelopersPage title="Webhook endpoint" description={<span className={styles.code}>{endpoint.data.url}</span>} actions={back}>
      <RevealedSecret revealed={revealed} onDone={() => setRevealed(null)} />
      <StatusNotices endpoint={endpoint.data} writable={writable} />
      {writable ? <EndpointSettings endpoint={endpoint.data} /> : <EndpointSummary endpoint={endpoint.data} />}
      {writable && <TestPing endpointId={endpointId} />}
      <Deliveries endpointId={endpointId} writable={writable} />
      {writable && <SecretAndDeletion endpoint={endpoint.data} onRotated={setRevealed} />}
    </DevelopersPage>
  );
}

/** PATCH the endpoint, then show the answer everywhere it is cached. */
function useUpdateEndpoint(id: string) {
  const api = useApi();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (changes: UpdateWebhookEndpointInput) => api.patch<WebhookEndpoint>(`/v1/webhook-endpoints/${id}`, changes),
    onSuccess: async (updated) => {
      queryClient.setQueryData(developerKeys.webhookEndpoint(id), updated);
      await queryClient.invalidateQueries({ queryKey: developerKeys.webhookEndpoints, exact: true });
    },
  });
}

function StatusNotices({ endpoint, writable }: { endpoint: WebhookEndpoint; writable: boolean }) {
  const update = useUpdateEndpoint(endpoint.id);
  return (
    <>
      {endpoint.status === 'disabled' && (
        <Notice>
          {disabledReason(endpoint.disabled_reason)} Nothing is sent to it meanwhile; events that happen until it is enabled are not sent later, but can be
          replayed from the delivery history.{' '}
          {writable && (
            <Button onClick={() => update.mutate({ status: 'enabled' })} disabled={update.isPending}>
              Enable
            </Button>
          )}
          <ErrorMessage error={update.error} />
        </Notice>
      )}
      {endpoint.secret_rotation && (
        <Notice>
          The secret was rotated: deliveries carry a signature with the previous secret too until{' '}
          {fullTime(endpoint.secret_rotation.previous_secret_expires_at)}. Give your receiver the new secret before then.
        </Notice>
      )}
    </>
  );
}

/** What a member who may not change the endpoint sees of it. */
function EndpointSummary({ endpoint }: { endpoint: WebhookEndpoint }) {
  const connectionName = useConnectionName();
  return (
    <Section title="Settings">
      <dl className={styles.dl}>
        <dt>URL</dt>
        <dd className={styles.code}>{endpoint.url}</dd>
        <dt>Description</dt>
        <dd>{endpoint.description ?? '—'}</dd>
        <dt>Events</dt>
        <dd>{eventsSummary(endpoint.events)}</dd>
        <dt>Numbers</dt>
        <dd>{connectionName(endpoint.connection_id)}</dd>
        <dt>Status</dt>
        <dd>
          <EndpointStatus endpoint={endpoint} />
        </dd>
      </dl>
    </Section>
  );
}

function EndpointSettings({ endpoint }: { endpoint: WebhookEndpoint }) {
  const connectionName = useConnectionName();
  const update = useUpdateEndpoint(endpoint.id);
  const [url, setUrl] = useState(endpoint.url);
  const [description, setDescription] = useState(endpoint.description ?? '');
  const [events, setEvents] = useState<string[]>(endpoint.events);
  const [saved, setSaved] = useState(false);
  const changes: UpdateWebhookEndpointInput = {};
  if (url.trim() !== endpoint.url) changes.url = url.trim();
  if (description.trim() !== (endpoint.description ?? '')) changes.description = description.trim() || null;
  if ([...events].sort().join() !== [...endpoint.events].sort().join()) changes.events = events as UpdateWebhookEndpointInput['events'];
  const changed = Object.keys(changes).length > 0;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    update.mutate(changes, { onSuccess: () => setSaved(true) });
  };
  return (
    <Section
      title="Settings"
      actions={
        endpoint.status === 'enabled' && (
          <ConfirmButton
            label="Disable"
            title="Disable this endpoint?"
            consequence="Deliveries to it stop until it is enabled again. Events that happen meanwhile are not sent when it is enabled, but stay in its delivery history, from where they can be replayed."
            confirmLabel="Disable endpoint"
            onConfirm={() => update.mutateAsync({ status: 'disabled' })}
          />
        )
      }
    >
      <form className={styles.form} onSubmit={submit}>
        <TextField label="Endpoint URL" type="url" required value={url} onChange={(e) => setUrl(e.target.value)} error={errorFor(update.error, 'url')} />
        <TextField label="Description" maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} />
        <p className={styles.muted}>
          Numbers: {connectionName(endpoint.connection_id)} (set when the endpoint was made). Status: <EndpointStatus endpoint={endpoint} />
        </p>
        <EventPicker value={events} onChange={setEvents} />
        <ErrorMessage error={update.error} />
        <div>
          <Button type="submit" variant="primary" disabled={!changed || events.length === 0 || update.isPending}>
            {update.isPending ? 'Saving…' : 'Save changes'}
          </Button>
          {saved && !changed && (
            <span role="status" className={styles.muted}>
              {' '}
              Saved.
            </span>
          )}
        </div>
      </form>
    </Section>
  );
}

/** Sends a signed `ping` now and shows what the receiver answered. */
function TestPing({ endpointId }: { endpointId: string }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const test = useMutation({
    mutationFn: () => api.post<WebhookTest>(`/v1/webhook-endpoints/${endpointId}/test`),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: developerKeys.deliveries(endpointId) }),
  });
  return (
    <Section title="Test">
      <p>Sends a signed ping event to the URL now, whatever the endpoint subscribes to, and shows the answer. Test pings never count towards disabling it.</p>
      <Button onClick={() => test.mutate()} disabled={test.isPending}>
        {test.isPending ? 'Sending…' : 'Send test ping'}
      </Button>
      <ErrorMessage error={test.error} />
      {test.data && (
        <div role="status" aria-label="Test result">
          <div className={styles.result}>
            <DeliveryOutcome
              delivery={{ status: test.data.success ? 'succeeded' : 'failed', response_status: test.data.status_code, error: test.data.error }}
            />
            <span>in {duration(test.data.duration_ms)}</span>
          </div>
          {test.data.response_excerpt && <pre className={styles.excerpt}>{test.data.response_excerpt}</pre>}
        </div>
      )}
    </Section>
  );
}

function Deliveries({ endpointId, writable }: { endpointId: string; writable: boolean }) {
  const [status, setStatus] = useState<'all' | 'failed'>('all');
  const list = useCursorList<WebhookDelivery>(developerKeys.deliveryList(endpointId, status), `/v1/webhook-endpoints/${endpointId}/deliveries`, {
    status: status === 'all' ? undefined : status,
  });
  return (
    <Section title="Deliveries">
      <div className={styles.filters}>
        <SelectField label="Show" value={status} onChange={(e) => setStatus(e.target.value as 'all' | 'failed')}>
          <option value="all">Every attempt</option>
          <option value="failed">Failed attempts</option>
        </SelectField>
        <span className={styles.muted}>Each attempt is kept 30 days, and can be replayed while it is.</span>
      </div>
      <PagedList
        list={list}
        empty={status === 'failed' ? 'No failed attempt.' : 'Nothing was sent yet. Send a test ping above, or wait for an event it subscribes to.'}
      >
        {(deliveries) => (
          <table className={tableClass}>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Event</th>
                <th scope="col">Attempt</th>
                <th scope="col">Result</th>
                <th scope="col">Duration</th>
                {writable && (
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {deliveries.map((delivery) => (
                <DeliveryRow key={delivery.id} delivery={delivery} writable={writable} />
              ))}
            </tbody>
          </table>
        )}
      </PagedList>
    </Section>
  );
}

function DeliveryRow({ delivery, writable }: { delivery: WebhookDelivery; writable: boolean }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const replay = useMutation({
    mutationFn: () => api.post<WebhookDelivery>(`/v1/webhook-deliveries/${delivery.id}/replay`),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: developerKeys.deliveries(delivery.endpoint_id) }),
  });
  return (
    <tr>
      <td>{fullTime(delivery.created_at)}</td>
      <td>
        <code className={styles.code}>{delivery.event_type}</code>
        <div className={styles.muted}>{delivery.event_id}</div>
      </td>
      <td>
        {delivery.replay_of ? 'replay' : `#${delivery.attempt}`}
        {delivery.next_retry_at && <div className={styles.muted}>next retry {fullTime(delivery.next_retry_at)}</div>}
      </td>
      <td>
        <DeliveryOutcome delivery={delivery} />
        {delivery.response_excerpt && (
          <details>
            <summary>Answer</summary>
            <pre className={styles.excerpt}>{delivery.response_excerpt}</pre>
          </details>
        )}
      </td>
      <td>{duration(delivery.duration_ms)}</td>
      {writable && (
        <td>
          <Button onClick={() => replay.mutate()} disabled={replay.isPending} aria-label={`Replay ${delivery.event_type} (${delivery.event_id})`}>
            {replay.isPending ? 'Replaying…' : 'Replay'}
          </Button>
          <ErrorMessage error={replay.error} />
        </td>
      )}
    </tr>
  );
}

function SecretAndDeletion({ endpoint, onRotated }: { endpoint: WebhookEndpoint; onRotated: (revealed: Revealed) => void }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const rotate = async () => {
    const rotated = await api.post<RotatedSecret>(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`);
    onRotated({
      title: 'New signing secret',
      label: 'Signing secret',
      value: rotated.secret,
      note: `The previous secret keeps signing too until ${fullTime(rotated.previous_secret_expires_at)}: each delivery carries both signatures until then.`,
    });
    await queryClient.invalidateQueries({ queryKey: developerKeys.webhookEndpoint(endpoint.id) });
  };
  const remove = async () => {
    await api.delete(`/v1/webhook-endpoints/${endpoint.id}`);
    queryClient.removeQueries({ queryKey: developerKeys.webhookEndpoint(endpoint.id) });
    await queryClient.invalidateQueries({ queryKey: developerKeys.webhookEndpoints });
    await navigate({ to: '/developers/webhooks' });
  };
  return (
    <Section title="Signing secret and deletion">
      <div className={styles.buttons}>
        <ConfirmButton
          label="Rotate secret"
          title="Rotate the signing secret?"
          consequence="A new secret is issued and shown once. The current one keeps signing too for 24 hours (each delivery carries both signatures), so your receiver keeps verifying while you give it the new one; after that only the new secret signs."
          confirmLabel="Rotate secret"
          onConfirm={rotate}
        />
        <ConfirmButton
          label="Delete endpoint"
          title="Delete this endpoint?"
          consequence={
            <>
              Nothing more is sent to <span className={styles.code}>{endpoint.url}</span>, retries still ahead are dropped, and its delivery history is deleted
              with it. This cannot be undone.
            </>
          }
          confirmLabel="Delete endpoint"
          onConfirm={remove}
        />
      </div>
    </Section>
  );
}

export const Route = createLazyRoute('/app/developers/webhooks/$endpointId')({ component: WebhookEndpointPage });
