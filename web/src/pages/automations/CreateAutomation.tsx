import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { useApi } from '../../auth/SessionContext.tsx';
import { Section } from '../../ui/admin.tsx';
import { Button, errorFor, ErrorMessage, SelectField, TextField } from '../../ui/controls.tsx';
import { useConnections } from '../connections/connections-data.ts';
import { automationKeys, type Automation } from './api.ts';
import { JsonField, parseJson, Problems } from './JsonField.tsx';
import styles from './automations.module.css';

const STARTER = `{
  "trigger": { "type": "message_received" },
  "start": "greet",
  "steps": [
    { "id": "greet", "type": "send_message", "text": "Thanks for your message! We will answer soon." }
  ]
}`;

/** Where an automation runs: every number of a mode, or one connection (whose mode it then takes). */
function scopeOf(where: string): { mode?: 'live' | 'test'; connection_id?: string } {
  if (where === 'live' || where === 'test') return { mode: where };
  return { connection_id: where };
}

/** A new automation: a draft, and with a definition, its version 1. */
export function CreateAutomation({ onClose }: { onClose: () => void }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const connections = useConnections();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [where, setWhere] = useState('live');
  const [definition, setDefinition] = useState(STARTER);
  const [message, setMessage] = useState('');
  const create = useMutation({
    mutationFn: (body: Record<string, unknown>) => api.post<Automation>('/v1/automations', body),
    onSuccess: async (automation) => {
      await queryClient.invalidateQueries({ queryKey: automationKeys.all });
      await navigate({ to: '/automations/$automationId', params: { automationId: automation.id } });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const parsed = definition.trim() === '' ? null : parseJson(definition);
    if (parsed && !parsed.ok) return;
    create.mutate({
      name,
      ...(description ? { description } : {}),
      ...scopeOf(where),
      ...(parsed ? { definition: parsed.value } : {}),
      ...(parsed && message ? { message } : {}),
    });
  };
  const usable = connections.data?.filter((connection) => connection.status !== 'disconnected') ?? [];
  return (
    <Section title="New automation">
      <form className={styles.form} onSubmit={submit}>
        <TextField label="Name" required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} error={errorFor(create.error, '/name')} />
        <TextField
          label="Description"
          maxLength={2000}
          value={description}
          onChange={(e) => setDescription(e.target.value)}
          error={errorFor(create.error, '/description')}
        />
        <SelectField label="Runs on" value={where} onChange={(e) => setWhere(e.target.value)}>
          <option value="live">Every live number</option>
          <option value="test">Every test number</option>
          {usable.map((connection) => (
            <option key={connection.id} value={connection.id}>
              Only {connection.name ?? connection.display_phone_number ?? connection.id}
              {connection.test ? ' (test)' : ''}
            </option>
          ))}
        </SelectField>
        <JsonField
          label="Definition"
          value={definition}
          onChange={setDefinition}
          rows={14}
          hint="The trigger and the steps, as JSON (docs/automations.md, Definitions). It becomes version 1; leave it empty to write it later."
        />
        <TextField label="Version message" maxLength={500} placeholder="First version" value={message} onChange={(e) => setMessage(e.target.value)} />
        <ErrorMessage error={create.error} />
        <Problems error={create.error} />
        <div className={styles.formActions}>
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" disabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create automation'}
          </Button>
        </div>
      </form>
    </Section>
  );
}
