import { useMutation } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { useApi } from '../../auth/SessionContext.tsx';
import { Button, ErrorMessage, TextField, errorFor } from '../../ui/controls.tsx';
import { shownOnField, TemplateChooser, useTemplateChoice, type ChosenTemplate } from '../templates/TemplateChooser.tsx';
import styles from '../templates/templates.module.css';
import { useRefreshNotifications } from './notification-parts.tsx';
import { recipientsError, recipientsOf, RecipientsField } from './recipients.tsx';
import type { CreateBatchInput, CreateNotificationInput, Notification, NotificationBatch } from './types.ts';

/** A `datetime-local` value (the reader's own time zone) as an instant; empty means now. */
const instantOf = (local: string) => (local ? new Date(local).toISOString() : undefined);

/**
 * Sends a template now or at a time: to one number as a notification (`POST /v1/notifications`), to
 * several as a batch (`POST /v1/notifications/batch`, `partial`: the numbers refused are listed on the
 * batch's page), each with the same values. The API takes values per recipient; this form does not.
 */
export function SendNotification({ onDone }: { onDone: () => void }) {
  const api = useApi();
  const navigate = useNavigate();
  const refresh = useRefreshNotifications();
  const choice = useTemplateChoice();
  const [recipients, setRecipients] = useState('');
  const [sendAt, setSendAt] = useState('');
  const numbers = recipientsOf(recipients);
  const send = useMutation({
    mutationFn: async (chosen: ChosenTemplate) => {
      const common = { connection_id: chosen.connectionId, send_at: instantOf(sendAt) };
      if (numbers.length === 1) {
        const body: CreateNotificationInput = { ...common, to: numbers[0]!, template: { id: chosen.templateId, parameters: chosen.parameters } };
        const notification = await api.post<Notification>('/v1/notifications', body);
        return { to: '/notifications/$notificationId', params: { notificationId: notification.id } } as const;
      }
      const body: CreateBatchInput = {
        ...common,
        template: { id: chosen.templateId },
        mode: 'partial',
        recipients: numbers.map((to) => ({ to, parameters: chosen.parameters })),
      };
      const batch = await api.post<NotificationBatch>('/v1/notifications/batch', body);
      return { to: '/notifications/batches/$batchId', params: { batchId: batch.id } } as const;
    },
    onSuccess: async (target) => {
      await refresh();
      onDone();
      await navigate(target);
    },
  });
  const parametersParam = numbers.length > 1 ? '/recipients/0/parameters' : '/template/parameters';
  const refusedRecipient = recipientsError(send.error);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const chosen = choice.resolve();
    if (chosen && numbers.length > 0) send.mutate(chosen);
  };
  return (
    <form className={styles.stack} onSubmit={submit} aria-label="Send a notification">
      <TemplateChooser choice={choice} refusal={send.error} parametersParam={parametersParam} />
      <div className={styles.grid}>
        <RecipientsField
          value={recipients}
          onChange={setRecipients}
          hint={
            numbers.length > 1
              ? `${numbers.length} numbers: sent as one batch, spaced at the number's pace.`
              : 'Numbers in international format (+447700900123), one per line. Several make a batch.'
          }
          error={refusedRecipient}
        />
        <TextField
          label="Send at (optional)"
          type="datetime-local"
          value={sendAt}
          onChange={(event) => setSendAt(event.target.value)}
          hint="In your time zone; empty sends now. Not sent after its expiry (by category: 10 minutes to 24 hours)."
          error={errorFor(send.error, 'send_at')}
        />
      </div>
      <ErrorMessage error={refusedRecipient || errorFor(send.error, 'send_at') || shownOnField(choice, send.error, parametersParam) ? null : send.error} />
      <div className={styles.row}>
        <Button type="submit" variant="primary" disabled={send.isPending || !choice.template || Boolean(choice.blocked)}>
          {send.isPending ? 'Sending…' : numbers.length > 1 ? `Send to ${numbers.length} numbers` : 'Send notification'}
        </Button>
        <Button onClick={onDone} disabled={send.isPending}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
