import { useMutation, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { CreateDialog, dialogActionsClass, PagedList, tableClass, useCursorList, type CreateFormProps } from '../../ui/admin.tsx';
import { Button, errorFor, ErrorMessage, SelectField, TextField } from '../../ui/controls.tsx';
import { useConnections } from '../connections/connections-data.ts';
import { fullTime } from '../inbox/format.ts';
import { DevelopersPage } from './DevelopersPage.tsx';
import styles from './developers.module.css';
import { developerKeys } from './queries.ts';
import { RevealedSecret, type Revealed } from './RevealedSecret.tsx';
import type { CreateWebhookEndpointInput, WebhookEndpoint, WebhookEndpointWithSecret } from './types.ts';
import { EndpointStatus, EventPicker, eventsSummary, EVERY_EVENT, useConnectionName } from './webhook-parts.tsx';

function WebhooksPage() {
  const { can } = usePermissions();
  const queryClient = useQueryClient();
  const [revealed, setRevealed] = useState<Revealed | null>(null);
  const list = useCursorList<WebhookEndpoint>(developerKeys.webhookEndpoints, '/v1/webhook-endpoints');
  const connectionName = useConnectionName();
  const created = (endpoint: WebhookEndpointWithSecret) => {
    setRevealed({
      title: 'Endpoint created',
      label: 'Signing secret',
      value: endpoint.secret,
      note: 'Your receiver checks each delivery’s Service-Signature header with it (see Receiving webhooks in the docs).',
    });
    void queryClient.invalidateQueries({ queryKey: developerKeys.webhookEndpoints });
  };
  return (
    <DevelopersPage
      title="Webhooks"
      description="Endpoints receive the organization's events as signed HTTP POSTs, retried for about 41 hours when the receiver fails."
      actions={can('webhooks:write') && <CreateEndpoint onCreated={created} />}
    >
      <RevealedSecret revealed={revealed} onDone={() => setRevealed(null)} />
      <PagedList
        list={list}
        empty={
          can('webhooks:write')
            ? 'No endpoint yet. Add one with “New endpoint” to have events sent to your server.'
            : 'No endpoint yet. Owners and admins add them.'
        }
      >
        {(endpoints) => (
          <table className={tableClass}>
            <thead>
              <tr>
                <th scope="col">Endpoint</th>
                <th scope="col">Events</th>
                <th scope="col">Numbers</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {endpoints.map((endpoint) => (
                <tr key={endpoint.id}>
                  <td>
                    <Link to="/developers/webhooks/$endpointId" params={{ endpointId: endpoint.id }} className={styles.code}>
                      {endpoint.url}
                    </Link>
                    {endpoint.description && <div className={styles.muted}>{endpoint.description}</div>}
                  </td>
                  <td>{eventsSummary(endpoint.events)}</td>
                  <td>{connectionName(endpoint.connection_id)}</td>
                  <td>
                    <EndpointStatus endpoint={endpoint} />
                  </td>
                  <td>{fullTime(endpoint.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </PagedList>
    </DevelopersPage>
  );
}

function CreateEndpoint({ onCreated }: { onCreated: (endpoint: WebhookEndpointWithSecret) => void }) {
  return <CreateDialog label="New endpoint" title="Add a webhook endpoint" onCreated={onCreated} form={CreateEndpointForm} />;
}

function CreateEndpointForm({ onCancel, onCreated }: CreateFormProps<WebhookEndpointWithSecret>) {
  const api = useApi();
  const connections = (useConnections().data ?? []).filter((connection) => connection.status !== 'disconnected');
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [connectionId, setConnectionId] = useState('');
  const [events, setEvents] = useState<string[]>([EVERY_EVENT]);
  const create = useMutation({
    mutationFn: () => {
      const body: CreateWebhookEndpointInput = { url: url.trim(), events: events as CreateWebhookEndpointInput['events'] };
      if (description.trim()) body.description = description.trim();
      if (connectionId) body.connection_id = connectionId;
      return api.post<WebhookEndpointWithSecret>('/v1/webhook-endpoints', body);
    },
    onSuccess: onCreated,
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className={styles.form} onSubmit={submit}>
      <TextField
        label="Endpoint URL"
        type="url"
        required
        placeholder="https://hooks.example.com/messaging"
        hint="A public https URL; the service never follows redirects."
        value={url}
        onChange={(e) => setUrl(e.target.value)}
        error={errorFor(create.error, 'url')}
      />
      <TextField
        label="Description"
        maxLength={500}
        value={description}
        onChange={(e) => setDescription(e.target.value)}
        error={errorFor(create.error, 'description')}
      />
      <SelectField
        label="Numbers"
        hint="Cannot be changed later: add another endpoint instead."
        value={connectionId}
        onChange={(e) => setConnectionId(e.target.value)}
        error={errorFor(create.error, 'connection_id')}
      >
        <option value="">Events of every number</option>
        {connections.map((connection) => (
          <option key={connection.id} value={connection.id}>
            Only {connection.name ?? connection.display_phone_number ?? connection.id}
          </option>
        ))}
      </SelectField>
      <EventPicker value={events} onChange={setEvents} />
      <ErrorMessage error={create.error} />
      <div className={dialogActionsClass}>
        <Button onClick={onCancel} disabled={create.isPending}>
          Cancel
        </Button>
        <Button type="submit" variant="primary" disabled={create.isPending || events.length === 0}>
          {create.isPending ? 'Checking the URL…' : 'Add endpoint'}
        </Button>
      </div>
    </form>
  );
}

export const Route = createLazyRoute('/app/developers/webhooks')({ component: WebhooksPage });
