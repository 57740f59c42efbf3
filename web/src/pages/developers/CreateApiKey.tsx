import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import {
  CONNECTION_KEY_SCOPES,
  MODES,
  ORGANIZATION_KEY_ALLOWED_SCOPES,
  ORGANIZATION_KEY_DEFAULT_SCOPES,
  type Mode,
  type Scope,
} from '../../../../src/modules/credentials/scopes.schemas.ts';
import { useApi } from '../../auth/SessionContext.tsx';
import { CreateDialog, dialogActionsClass, type CreateFormProps } from '../../ui/admin.tsx';
import { Button, errorFor, ErrorMessage, Loading, Notice, SelectField, TextField } from '../../ui/controls.tsx';
import { useConnections } from '../connections/connections-data.ts';
import styles from './developers.module.css';
import { Choice, ChoiceGroup } from './fields.tsx';
import type { ApiKeyWithSecret, CreateApiKeyInput } from './types.ts';

type Kind = CreateApiKeyInput['kind'];

/** What each kind may hold, and what it holds unless narrowed: the server's own lists. */
const SCOPES_OF: Record<Kind, { allowed: readonly Scope[]; defaults: readonly Scope[] }> = {
  organization: { allowed: ORGANIZATION_KEY_ALLOWED_SCOPES, defaults: ORGANIZATION_KEY_DEFAULT_SCOPES },
  connection: { allowed: CONNECTION_KEY_SCOPES, defaults: CONNECTION_KEY_SCOPES },
};

/** "New API key": the form in a dialog; the created key (with its secret) goes to `onCreated`. */
export function CreateApiKey({ onCreated }: { onCreated: (key: ApiKeyWithSecret) => void }) {
  return <CreateDialog label="New API key" title="Create an API key" onCreated={onCreated} form={CreateApiKeyForm} />;
}

function CreateApiKeyForm({ onCancel, onCreated }: CreateFormProps<ApiKeyWithSecret>) {
  const api = useApi();
  const connections = useConnections();
  const [name, setName] = useState('');
  const [kind, setKind] = useState<Kind>('organization');
  const [mode, setMode] = useState<Mode>('live');
  const [connectionId, setConnectionId] = useState('');
  const [scopes, setScopes] = useState<Set<Scope>>(new Set(SCOPES_OF.organization.defaults));
  // A test key reaches test connections only, so it can be bound to nothing else.
  const eligible = (connections.data ?? []).filter((connection) => connection.status !== 'disconnected' && (mode === 'live' || connection.test));
  const chosenConnection = eligible.some((connection) => connection.id === connectionId) ? connectionId : (eligible[0]?.id ?? '');

  const create = useMutation({
    mutationFn: () => {
      const body: CreateApiKeyInput = { kind, mode, scopes: SCOPES_OF[kind].allowed.filter((scope) => scopes.has(scope)) };
      if (name.trim()) body.name = name.trim();
      if (kind === 'connection') body.connection_id = chosenConnection;
      return api.post<ApiKeyWithSecret>('/v1/api-keys', body);
    },
    onSuccess: onCreated,
  });

  const chooseKind = (next: Kind) => {
    setKind(next);
    setScopes(new Set(SCOPES_OF[next].defaults));
  };
  const toggle = (scope: Scope, on: boolean) =>
    setScopes((current) => {
      const next = new Set(current);
      if (on) next.add(scope);
      else next.delete(scope);
      return next;
    });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };

  return (
    <form className={styles.form} onSubmit={submit}>
      <TextField
        label="Name"
        hint="To recognise the key later, e.g. the integration that uses it."
        value={name}
        maxLength={100}
        onChange={(e) => setName(e.target.value)}
        error={errorFor(create.error, 'name')}
      />
      <ChoiceGroup legend="Kind">
        <Choice
          type="radio"
          name="kind"
          label="Organization key"
          detail="reaches every number of the organization"
          checked={kind === 'organization'}
          onChange={() => chooseKind('organization')}
        />
        <Choice
          type="radio"
          name="kind"
          label="Connection key"
          detail="reaches one number only"
          checked={kind === 'connection'}
          onChange={() => chooseKind('connection')}
        />
      </ChoiceGroup>
      <ChoiceGroup legend="Mode" hint="A test key is accepted only on test numbers; a live key on every number.">
        {MODES.map((each) => (
          <Choice key={each} type="radio" name="mode" label={each === 'live' ? 'Live' : 'Test'} checked={mode === each} onChange={() => setMode(each)} />
        ))}
      </ChoiceGroup>
      {kind === 'connection' &&
        (connections.isPending ? (
          <Loading label="Loading the numbers…" />
        ) : connections.error ? (
          <ErrorMessage error={connections.error} />
        ) : eligible.length === 0 ? (
          <Notice>
            {mode === 'test'
              ? 'No test number is connected: a test connection key can only be made for a test number.'
              : 'No number is connected yet: connect one on the Connections page first.'}
          </Notice>
        ) : (
          <SelectField
            label="Connection"
            value={chosenConnection}
            onChange={(e) => setConnectionId(e.target.value)}
            error={errorFor(create.error, 'connection_id')}
          >
            {eligible.map((connection) => (
              <option key={connection.id} value={connection.id}>
                {connection.name ?? connection.display_phone_number ?? connection.id}
                {connection.test ? ' (test)' : ''}
              </option>
            ))}
          </SelectField>
        ))}
      <ChoiceGroup
        legend="Scopes"
        hint={
          kind === 'organization'
            ? 'Ticked: what an organization key holds by default. keys:write lets the key list, revoke and rotate keys of its own mode.'
            : 'Ticked: what a connection key holds by default, which is also the most it can hold.'
        }
      >
        <div className={styles.choices}>
          {SCOPES_OF[kind].allowed.map((scope) => (
            <Choice
              key={scope}
              type="checkbox"
              name="scope"
              label={<code className={styles.code}>{scope}</code>}
              checked={scopes.has(scope)}
              onChange={(on) => toggle(scope, on)}
            />
          ))}
        </div>
      </ChoiceGroup>
      <ErrorMessage error={create.error} />
      <div className={dialogActionsClass}>
        <Button onClick={onCancel} disabled={create.isPending}>
          Cancel
        </Button>
        <Button type="submit" variant="primary" disabled={create.isPending || (kind === 'connection' && !chosenConnection)}>
          {create.isPending ? 'Creating…' : 'Create key'}
        </Button>
      </div>
    </form>
  );
}
