import * as Dialog from '@radix-ui/react-dialog';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useId, useMemo, useState, type FormEvent } from 'react';
import { ApiError } from '../../../api/client.ts';
import { queryKeys } from '../../../api/keys.ts';
import { useApi } from '../../../auth/SessionContext.tsx';
import { Button, Empty, ErrorMessage, Loading, TextField } from '../../../ui/controls.tsx';
import styles from './compose.module.css';
import { uploadMedia, useSend } from './sending.ts';
import { bodyField, buttonField, missingField, slotsOf, templateInput, type Slots, type Values } from './templates.ts';
import type { Conversation, Template } from './types.ts';
import { TemplatePreview } from '../../templates/TemplatePreview.tsx';

/** The connection's approved templates (`queryKeys.templates(connectionId)` holds them all, every page followed). */
function useApprovedTemplates(connectionId: string) {
  const api = useApi();
  return useQuery({
    queryKey: queryKeys.templates(connectionId),
    staleTime: 60_000,
    queryFn: () => api.all<Template>('/v1/templates', { connection_id: connectionId, status: 'approved' }),
  });
}

/**
 * Picks an approved template, fills its placeholders with a preview of the result, and sends it: the
 * one way to reach a customer whose 24-hour window is closed (`reason` says why it is), and open to
 * any conversation otherwise.
 */
export function TemplatePicker({
  conversation,
  reason,
  triggerLabel,
  replyTo,
  onSent,
}: {
  conversation: Conversation;
  reason: string | null;
  triggerLabel: string;
  replyTo?: string | undefined;
  onSent?: () => void;
}) {
  const [open, setOpen] = useState(false);
  return (
    <Dialog.Root open={open} onOpenChange={setOpen}>
      <Dialog.Trigger asChild>
        <Button variant={reason ? 'primary' : undefined}>{triggerLabel}</Button>
      </Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className={styles.overlay} />
        <Dialog.Content className={styles.dialog}>
          <Dialog.Title className={styles.dialogTitle}>Send a template</Dialog.Title>
          <Dialog.Description className={styles.muted}>
            {reason
              ? `${reason} Only a template the provider approved can reach the customer now.`
              : 'Templates are messages the provider approved in advance.'}
          </Dialog.Description>
          {/* Mounted only while open: a dialog opened again starts from a clean form. */}
          {open && (
            <TemplateForm
              conversation={conversation}
              replyTo={replyTo}
              onSent={() => {
                setOpen(false);
                onSent?.();
              }}
            />
          )}
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

function TemplateForm({ conversation, replyTo, onSent }: { conversation: Conversation; replyTo?: string | undefined; onSent: () => void }) {
  const templates = useApprovedTemplates(conversation.connection_id);
  const [templateId, setTemplateId] = useState('');
  const selectId = useId();
  if (templates.isPending) return <Loading label="Loading templates…" />;
  if (templates.error) return <ErrorMessage error={templates.error} />;
  if (templates.data.length === 0) {
    return <Empty>This number has no approved templates yet. An owner or admin creates them (see the templates guide), and the provider reviews them.</Empty>;
  }
  const template = templates.data.find((candidate) => candidate.id === templateId) ?? null;
  return (
    <div className={styles.stack}>
      <div className={styles.field}>
        <label htmlFor={selectId} className={styles.label}>
          Template
        </label>
        <select id={selectId} className={styles.select} value={templateId} onChange={(event) => setTemplateId(event.target.value)}>
          <option value="">Choose a template…</option>
          {templates.data.map((candidate) => (
            <option key={candidate.id} value={candidate.id}>
              {candidate.name} ({candidate.language}
              {candidate.category ? `, ${candidate.category}` : ''})
            </option>
          ))}
        </select>
      </div>
      {template && <TemplateFields key={template.id} conversation={conversation} template={template} replyTo={replyTo} onSent={onSent} />}
    </div>
  );
}

const MEDIA_ACCEPT = { image: 'image/jpeg,image/png', video: 'video/mp4,video/3gpp', document: undefined } as const;

/** Which of the picker's fields an error's `param` (a pointer into the send body) names. */
function fieldOfParam(param: string | null | undefined, slots: Slots): string | null {
  const match = /^\/template\/(header|body|buttons)(?:\/([^/]+))?/.exec(param ?? '');
  if (!match) return null;
  const [, part, at] = match;
  if (part === 'header') return 'header';
  if (at === undefined) return null;
  if (part === 'body') return bodyField(slots.format === 'named' ? at : (slots.body[Number(at)] ?? ''));
  const button = slots.buttons[Number(at)];
  return button ? buttonField(button.index) : null;
}

function TemplateFields({
  conversation,
  template,
  replyTo,
  onSent,
}: {
  conversation: Conversation;
  template: Template;
  replyTo?: string | undefined;
  onSent: () => void;
}) {
  const api = useApi();
  const slots = useMemo(() => slotsOf(template), [template]);
  const [values, setValues] = useState<Values>({});
  const [headerMediaId, setHeaderMediaId] = useState<string | null>(null);
  const [showMissing, setShowMissing] = useState(false);
  const upload = useMutation({ mutationFn: (file: File) => uploadMedia(api, file), onSuccess: (media) => setHeaderMediaId(media.id) });
  const send = useSend(conversation);
  const missing = missingField(slots, values, headerMediaId);
  const refusedField = send.error instanceof ApiError ? fieldOfParam(send.error.body.param, slots) : null;
  const fieldError = (field: string) =>
    field === refusedField ? send.error!.message : showMissing && field === missing ? 'Fill this in: the template needs it.' : null;
  const set = (field: string) => (event: { target: { value: string } }) => setValues((old) => ({ ...old, [field]: event.target.value }));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (slots.unsupported) return;
    if (missing) {
      setShowMissing(true);
      return;
    }
    send.mutate({ type: 'template', template: templateInput(template, slots, values, headerMediaId), reply_to: replyTo }, { onSuccess: onSent });
  };

  return (
    <form className={styles.stack} onSubmit={submit} noValidate>
      {slots.unsupported && <p className={styles.muted}>The inbox cannot send this template. {slots.unsupported}</p>}
      {slots.header?.kind === 'text' && (
        <TextField label={`Header {{${slots.header.name}}}`} value={values.header ?? ''} onChange={set('header')} error={fieldError('header')} />
      )}
      {slots.header && slots.header.kind !== 'text' && (
        <div className={styles.field}>
          <label className={styles.label}>
            Header {slots.header.kind}
            <input
              type="file"
              className={styles.fileInput}
              accept={MEDIA_ACCEPT[slots.header.kind]}
              aria-invalid={fieldError('header') ? true : undefined}
              onChange={(event) => {
                const file = event.target.files?.[0];
                setHeaderMediaId(null);
                if (file) upload.mutate(file);
              }}
            />
          </label>
          {upload.isPending && <span className={styles.muted}>Uploading…</span>}
          {fieldError('header') && <span className={styles.fieldError}>{fieldError('header')}</span>}
          <ErrorMessage error={upload.error} />
        </div>
      )}
      {slots.body.map((name) => (
        <TextField
          key={name}
          label={`Body {{${name}}}`}
          value={values[bodyField(name)] ?? ''}
          onChange={set(bodyField(name))}
          error={fieldError(bodyField(name))}
        />
      ))}
      {slots.buttons.map((slot) => (
        <TextField
          key={slot.index}
          label={slot.type === 'url' ? `“${slot.text}” button link ending` : `“${slot.text}” button code`}
          value={values[buttonField(slot.index)] ?? ''}
          onChange={set(buttonField(slot.index))}
          error={fieldError(buttonField(slot.index))}
        />
      ))}
      <TemplatePreview template={template} values={values} sticky={false} />
      {!refusedField && <ErrorMessage error={send.error} />}
      <div className={styles.row}>
        <Button type="submit" variant="primary" disabled={send.isPending || upload.isPending || Boolean(slots.unsupported)}>
          {send.isPending ? 'Sending…' : 'Send template'}
        </Button>
        <Dialog.Close asChild>
          <Button>Cancel</Button>
        </Dialog.Close>
      </div>
    </form>
  );
}
