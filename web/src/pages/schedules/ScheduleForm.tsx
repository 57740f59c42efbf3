import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useApi } from '../../auth/SessionContext.tsx';
import { Button, ErrorMessage, TextField, errorFor } from '../../ui/controls.tsx';
import { recipientsError, recipientsOf, RecipientsField } from '../notifications/recipients.tsx';
import { shownOnField, TemplateChooser, useTemplateChoice, type ChosenTemplate } from '../templates/TemplateChooser.tsx';
import styles from '../templates/templates.module.css';
import { scheduleKeys } from './keys.ts';
import { draftOf, readDraft, RecurrenceFields, type RecurrenceDraft } from './RecurrenceFields.tsx';
import type { CreateScheduleInput, Schedule } from './types.ts';

const PARAMETERS = '/target/parameters';
/** The refusals the recurrence fields show themselves. */
const RECURRENCE_PARAMS = ['timezone', 'recurrence/expression', 'recurrence/every_seconds', 'recurrence/at', 'start_at', 'end_at', 'max_occurrences'];

/**
 * A new schedule that sends a template as notifications (`POST /v1/schedules`, target `notification`):
 * when (with the description and next occurrences shown before saving), what and to whom.
 * Automation targets are made on the automation's page or through the API.
 */
export function ScheduleForm({ onCreated, onCancel }: { onCreated: (schedule: Schedule) => void; onCancel: () => void }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const choice = useTemplateChoice();
  const [name, setName] = useState('');
  const [draft, setDraft] = useState<RecurrenceDraft>(() => draftOf());
  const [recipients, setRecipients] = useState('');
  const numbers = recipientsOf(recipients);
  const create = useMutation({
    mutationFn: (chosen: ChosenTemplate) => {
      const read = readDraft(draft, new Date());
      const body: CreateScheduleInput = {
        ...(name.trim() ? { name: name.trim() } : {}),
        timezone: read.timezone ?? draft.timezone,
        recurrence: read.recurrence!,
        ...(read.startAt ? { start_at: read.startAt.toISOString() } : {}),
        ...(read.endAt ? { end_at: read.endAt.toISOString() } : {}),
        ...(read.maxOccurrences ? { max_occurrences: read.maxOccurrences } : {}),
        target: { type: 'notification', connection_id: chosen.connectionId, template: { id: chosen.templateId }, to: numbers, parameters: chosen.parameters },
      };
      return api.post<Schedule>('/v1/schedules', body);
    },
    onSuccess: async (schedule) => {
      await queryClient.invalidateQueries({ queryKey: scheduleKeys.all });
      onCreated(schedule);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!readDraft(draft, new Date()).recurrence) return;
    const chosen = choice.resolve();
    if (chosen && numbers.length > 0) create.mutate(chosen);
  };
  const refusedRecipient = recipientsError(create.error);
  const shownAbove =
    Boolean(refusedRecipient) ||
    Boolean(errorFor(create.error, 'name')) ||
    RECURRENCE_PARAMS.some((param) => errorFor(create.error, param)) ||
    shownOnField(choice, create.error, PARAMETERS);
  return (
    <form className={styles.stack} onSubmit={submit} aria-label="New schedule">
      <TextField
        label="Name (optional)"
        maxLength={200}
        value={name}
        onChange={(event) => setName(event.target.value)}
        error={errorFor(create.error, 'name')}
      />
      <fieldset className={styles.fieldset}>
        <legend>When</legend>
        <RecurrenceFields draft={draft} onChange={setDraft} refusal={create.error} />
      </fieldset>
      <fieldset className={styles.fieldset}>
        <legend>What it sends</legend>
        <TemplateChooser choice={choice} refusal={create.error} parametersParam={PARAMETERS} />
        <RecipientsField
          value={recipients}
          onChange={setRecipients}
          hint={`Numbers in international format (+447700900123), one per line: each occurrence sends ${numbers.length > 1 ? `one batch to all ${numbers.length}` : 'one notification to each'}.`}
          error={refusedRecipient}
        />
      </fieldset>
      <ErrorMessage error={shownAbove ? null : create.error} />
      <div className={styles.row}>
        <Button type="submit" variant="primary" disabled={create.isPending || !choice.template || Boolean(choice.blocked)}>
          {create.isPending ? 'Creating…' : 'Create schedule'}
        </Button>
        <Button onClick={onCancel} disabled={create.isPending}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
