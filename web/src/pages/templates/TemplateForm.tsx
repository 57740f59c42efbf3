import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useApi } from '../../auth/SessionContext.tsx';
import { Button, errorFor, ErrorMessage, SelectField, TextAreaField, TextField } from '../../ui/controls.tsx';
import { TEMPLATE_CATEGORIES } from '../../../../src/provider/provider.schemas.ts';
import { templateKeys } from './keys.ts';
import {
  BUTTON_LABELS,
  BUTTON_TYPES,
  bodyPlaceholders,
  createBody,
  emptyDraft,
  headerPlaceholder,
  isDynamicUrl,
  newButton,
  previewInput,
  type ButtonDraft,
  type TemplateDraft,
} from './template-draft.ts';
import { TemplatePreview } from './TemplatePreview.tsx';
import styles from './templates.module.css';
import type { Template } from './types.ts';

const MAX_BUTTONS = 10;

/**
 * A new template for one number, previewed as the customer will read it (filled with its examples)
 * while it is typed, then submitted for the provider's review (`POST /v1/templates`).
 */
export function TemplateForm({ connectionId, onCreated, onCancel }: { connectionId: string; onCreated: (template: Template) => void; onCancel: () => void }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const [draft, setDraft] = useState<TemplateDraft>(emptyDraft);
  const create = useMutation({
    mutationFn: () => api.post<Template>('/v1/templates', createBody(draft, connectionId)),
    onSuccess: async (template) => {
      await queryClient.invalidateQueries({ queryKey: templateKeys.connection(connectionId) });
      onCreated(template);
    },
  });
  const set = <K extends keyof TemplateDraft>(key: K, value: TemplateDraft[K]) => setDraft((old) => ({ ...old, [key]: value }));
  const setButton = (index: number, change: Partial<ButtonDraft>) =>
    set(
      'buttons',
      draft.buttons.map((button, at) => (at === index ? { ...button, ...change } : button)),
    );
  const header = headerPlaceholder(draft);
  const placeholders = bodyPlaceholders(draft);
  const preview = previewInput(draft);
  const refusal = create.error;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  const placeholderHint =
    draft.parameterFormat === 'named'
      ? 'Use {{first_name}}-style names for the values each send fills in.'
      : 'Use {{1}}, {{2}}… for the values each send fills in.';

  return (
    <form className={styles.split} onSubmit={submit} aria-label="New template">
      <div className={styles.stack}>
        <div className={styles.grid}>
          <TextField
            label="Name"
            required
            value={draft.name}
            onChange={(event) => set('name', event.target.value)}
            hint="Lower-case letters, digits and underscores: order_update."
            error={errorFor(refusal, 'name')}
          />
          <TextField
            label="Language"
            required
            value={draft.language}
            onChange={(event) => set('language', event.target.value)}
            hint="The provider's code: en, en_US, pt_BR."
            error={errorFor(refusal, 'language')}
          />
          <SelectField label="Category" value={draft.category} onChange={(event) => set('category', event.target.value as TemplateDraft['category'])}>
            {TEMPLATE_CATEGORIES.map((category) => (
              <option key={category} value={category}>
                {category}
              </option>
            ))}
          </SelectField>
          <SelectField
            label="Placeholders"
            value={draft.parameterFormat}
            onChange={(event) => set('parameterFormat', event.target.value as TemplateDraft['parameterFormat'])}
          >
            <option value="positional">Numbered: {'{{1}}'}</option>
            <option value="named">Named: {'{{first_name}}'}</option>
          </SelectField>
        </div>
        <TextField
          label="Header (optional)"
          maxLength={60}
          value={draft.headerText}
          onChange={(event) => set('headerText', event.target.value)}
          hint="Bold text above the body, up to 60 characters, at most one placeholder."
        />
        {header !== undefined && (
          <TextField
            label={`Example for the header's {{${header}}}`}
            required
            value={draft.headerExample}
            onChange={(event) => set('headerExample', event.target.value)}
          />
        )}
        <TextAreaField label="Body" required maxLength={1024} value={draft.body} onChange={(event) => set('body', event.target.value)} hint={placeholderHint} />
        {placeholders.length > 0 && (
          <fieldset className={styles.fieldset}>
            <legend>Examples</legend>
            <p className={styles.muted}>The provider&apos;s reviewers read the template with these values; each send gives its own.</p>
            <div className={styles.grid}>
              {placeholders.map((name) => (
                <TextField
                  key={name}
                  label={`Example for {{${name}}}`}
                  required
                  value={draft.bodyExamples[name] ?? ''}
                  onChange={(event) => set('bodyExamples', { ...draft.bodyExamples, [name]: event.target.value })}
                />
              ))}
            </div>
          </fieldset>
        )}
        <TextField
          label="Footer (optional)"
          maxLength={60}
          value={draft.footer}
          onChange={(event) => set('footer', event.target.value)}
          hint="Small text under the body, without placeholders."
        />
        <fieldset className={styles.fieldset}>
          <legend>Buttons</legend>
          {draft.buttons.map((button, index) => (
            <ButtonFields
              key={index}
              index={index}
              button={button}
              onChange={(change) => setButton(index, change)}
              onRemove={() =>
                set(
                  'buttons',
                  draft.buttons.filter((_, at) => at !== index),
                )
              }
            />
          ))}
          {draft.buttons.length < MAX_BUTTONS ? (
            <div className={styles.row}>
              {BUTTON_TYPES.map((type) => (
                <Button key={type} onClick={() => set('buttons', [...draft.buttons, newButton(type)])}>
                  Add {BUTTON_LABELS[type].toLowerCase()} button
                </Button>
              ))}
            </div>
          ) : (
            <p className={styles.muted}>A template has at most {MAX_BUTTONS} buttons.</p>
          )}
        </fieldset>
        <ErrorMessage error={errorFor(refusal, 'name') || errorFor(refusal, 'language') ? null : refusal} />
        <div className={styles.row}>
          <Button type="submit" variant="primary" disabled={create.isPending}>
            {create.isPending ? 'Submitting…' : 'Submit for review'}
          </Button>
          <Button onClick={onCancel} disabled={create.isPending}>
            Cancel
          </Button>
        </div>
      </div>
      <TemplatePreview template={preview.template} values={preview.values} label="Preview, with the examples" />
    </form>
  );
}

function ButtonFields({
  index,
  button,
  onChange,
  onRemove,
}: {
  index: number;
  button: ButtonDraft;
  onChange: (change: Partial<ButtonDraft>) => void;
  onRemove: () => void;
}) {
  const name = `Button ${index + 1}`;
  return (
    <div className={styles.row} role="group" aria-label={`${name}: ${BUTTON_LABELS[button.type]}`}>
      {button.type !== 'copy_code' && (
        <TextField label={`${name} text`} required maxLength={25} value={button.text} onChange={(event) => onChange({ text: event.target.value })} />
      )}
      {button.type === 'url' && (
        <TextField
          label={`${name} link`}
          required
          type="url"
          value={button.url}
          onChange={(event) => onChange({ url: event.target.value })}
          hint="End it with {{1}} to complete it on each send."
        />
      )}
      {button.type === 'url' && isDynamicUrl(button.url) && (
        <TextField label={`${name} example link`} required value={button.example} onChange={(event) => onChange({ example: event.target.value })} />
      )}
      {button.type === 'phone_number' && (
        <TextField label={`${name} phone number`} required value={button.phoneNumber} onChange={(event) => onChange({ phoneNumber: event.target.value })} />
      )}
      {button.type === 'copy_code' && (
        <TextField
          label={`${name} example code`}
          required
          maxLength={15}
          value={button.example}
          onChange={(event) => onChange({ example: event.target.value })}
        />
      )}
      <Button onClick={onRemove}>Remove {name.toLowerCase()}</Button>
    </div>
  );
}
