import { useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { ApiError } from '../../api/client.ts';
import { queryKeys } from '../../api/keys.ts';
import { useApi } from '../../auth/SessionContext.tsx';
import { ErrorMessage, Loading, SelectField, TextField } from '../../ui/controls.tsx';
import { useConnections } from '../connections/connections-data.ts';
import { bodyField, buttonField, missingField, slotsOf, templateInput, type Slots, type Values } from '../inbox/compose/templates.ts';
import { TemplatePreview } from './TemplatePreview.tsx';
import styles from './templates.module.css';
import type { Template, TemplateParameters } from './types.ts';

/**
 * Choosing what a notification or a schedule sends: a connected number, one of its approved
 * templates, and a value for each placeholder, with the message previewed as the customer will read
 * it. The placeholders are read as the inbox's template picker reads them (inbox/compose/templates.ts).
 */

/** A number's approved templates: the inbox picker's query (same key, so the live stream keeps both current). */
export function useApprovedTemplates(connectionId: string) {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.templates(connectionId),
    staleTime: 60_000,
    enabled: connectionId !== '',
    queryFn: () => api.all<Template>('/v1/templates', { connection_id: connectionId, status: 'approved' }),
  });
}

export interface ChosenTemplate {
  connectionId: string;
  templateId: string;
  parameters: TemplateParameters;
}

export function useTemplateChoice() {
  const connections = useConnections();
  const connected = connections.data?.filter((connection) => connection.status === 'connected') ?? [];
  const [picked, setPicked] = useState('');
  const [templateId, setTemplateId] = useState('');
  const [values, setValues] = useState<Values>({});
  const [showMissing, setShowMissing] = useState(false);
  // The only number (or the first) until another is picked.
  const connectionId = picked || connected[0]?.id || '';
  const templates = useApprovedTemplates(connectionId);
  const template = templates.data?.find((candidate) => candidate.id === templateId) ?? null;
  const slots = template ? slotsOf(template) : null;
  const blocked = !slots
    ? null
    : (slots.unsupported ?? (slots.header && slots.header.kind !== 'text' ? 'It has a media header: send it through the API.' : null));
  const missing = slots ? missingField(slots, values, null) : null;

  return {
    connections,
    connected,
    connectionId,
    templates,
    template,
    slots,
    values,
    blocked,
    missing: showMissing ? missing : null,
    pickConnection(id: string) {
      setPicked(id);
      setTemplateId('');
      setValues({});
    },
    pickTemplate(id: string) {
      setTemplateId(id);
      setValues({});
      setShowMissing(false);
    },
    setValue(field: string, value: string) {
      setValues((old) => ({ ...old, [field]: value }));
    },
    /** What to send, or null (and the first empty field pointed out) when something is missing. */
    resolve(): ChosenTemplate | null {
      if (!template || !slots || blocked) return null;
      if (missing) {
        setShowMissing(true);
        return null;
      }
      const { id, ...parameters } = templateInput(template, slots, values, null);
      return { connectionId, templateId: id!, parameters };
    },
  };
}

export type TemplateChoice = ReturnType<typeof useTemplateChoice>;

/** Which field an API refusal's `param` names, under `prefix` (`/template/parameters`, `/target/parameters`). */
function fieldOfParam(error: unknown, prefix: string, slots: Slots): string | null {
  if (!(error instanceof ApiError) || !error.body.param?.startsWith(prefix)) return null;
  const match = /^\/(header|body|buttons)(?:\/([^/]+))?/.exec(error.body.param.slice(prefix.length));
  if (!match) return null;
  const [, part, at] = match;
  if (part === 'header') return 'header';
  if (at === undefined) return null;
  if (part === 'body') return bodyField(slots.format === 'named' ? at : (slots.body[Number(at)] ?? ''));
  const button = slots.buttons[Number(at)];
  return button ? buttonField(button.index) : null;
}

export function TemplateChooser({ choice, refusal, parametersParam }: { choice: TemplateChoice; refusal: unknown; parametersParam: string }) {
  const { connections, connected, connectionId, templates, template, slots, values } = choice;
  if (connections.isPending) return <Loading label="Loading numbers…" />;
  if (connections.error) return <ErrorMessage error={connections.error} />;
  if (connected.length === 0) {
    return (
      <p className={styles.muted}>
        No number is connected: <Link to="/connections">connect one</Link> first.
      </p>
    );
  }
  const refused = slots ? fieldOfParam(refusal, parametersParam, slots) : null;
  const fieldError = (field: string) =>
    field === refused && refusal instanceof Error ? refusal.message : field === choice.missing ? 'Fill this in: the template needs it.' : null;
  return (
    <div className={styles.stack}>
      <div className={styles.grid}>
        <SelectField label="From number" value={connectionId} onChange={(event) => choice.pickConnection(event.target.value)}>
          {connected.map((connection) => (
            <option key={connection.id} value={connection.id}>
              {connection.name ?? connection.display_phone_number ?? connection.phone_number_id}
            </option>
          ))}
        </SelectField>
        {templates.isPending ? (
          <Loading label="Loading templates…" />
        ) : templates.error ? (
          <ErrorMessage error={templates.error} />
        ) : templates.data.length === 0 ? (
          <p className={styles.muted}>
            This number has no approved template yet: <Link to="/templates">create one</Link> and wait for the provider&apos;s review.
          </p>
        ) : (
          <SelectField label="Template" value={template?.id ?? ''} onChange={(event) => choice.pickTemplate(event.target.value)}>
            <option value="">Choose an approved template…</option>
            {templates.data.map((candidate) => (
              <option key={candidate.id} value={candidate.id}>
                {candidate.name} ({candidate.language}
                {candidate.category ? `, ${candidate.category}` : ''})
              </option>
            ))}
          </SelectField>
        )}
      </div>
      {template && slots && (
        <div className={styles.split}>
          <div className={styles.stack}>
            {choice.blocked && <p className={styles.muted}>This form cannot fill this template. {choice.blocked}</p>}
            {slots.header?.kind === 'text' && (
              <TextField
                label={`Header {{${slots.header.name}}}`}
                value={values.header ?? ''}
                onChange={(event) => choice.setValue('header', event.target.value)}
                error={fieldError('header')}
              />
            )}
            {slots.body.map((name) => (
              <TextField
                key={name}
                label={`Body {{${name}}}`}
                value={values[bodyField(name)] ?? ''}
                onChange={(event) => choice.setValue(bodyField(name), event.target.value)}
                error={fieldError(bodyField(name))}
              />
            ))}
            {slots.buttons.map((slot) => (
              <TextField
                key={slot.index}
                label={slot.type === 'url' ? `“${slot.text}” button link ending` : `“${slot.text}” button code`}
                value={values[buttonField(slot.index)] ?? ''}
                onChange={(event) => choice.setValue(buttonField(slot.index), event.target.value)}
                error={fieldError(buttonField(slot.index))}
              />
            ))}
            {slots.header === null && slots.body.length === 0 && slots.buttons.length === 0 && (
              <p className={styles.muted}>This template has no placeholders: it is sent as it is.</p>
            )}
          </div>
          <TemplatePreview template={template} values={values} />
        </div>
      )}
    </div>
  );
}

/** Whether a refusal is shown on one of the chooser's fields (then not again under the form). */
export function shownOnField(choice: TemplateChoice, error: unknown, parametersParam: string): boolean {
  return choice.slots !== null && fieldOfParam(error, parametersParam, choice.slots) !== null;
}
