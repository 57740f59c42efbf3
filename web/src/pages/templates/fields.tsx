import { useId, type ReactNode, type SelectHTMLAttributes, type TextareaHTMLAttributes } from 'react';
import ui from '../../ui/ui.module.css';

/**
 * The two labelled controls ui/controls.tsx lacks (a select and a multi-line text), in its look:
 * the label tied to the control, a hint or the error under it. Shared by the templates,
 * notifications and schedules pages.
 */
export function SelectField({
  label,
  hint,
  error,
  children,
  ...props
}: SelectHTMLAttributes<HTMLSelectElement> & { label: string; hint?: ReactNode; error?: string | null; children: ReactNode }) {
  const id = useId();
  return (
    <div className={ui.field}>
      <label htmlFor={id} className={ui.label}>
        {label}
      </label>
      <select
        id={id}
        className={ui.input}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : hint ? `${id}-hint` : undefined}
        {...props}
      >
        {children}
      </select>
      <Under id={id} hint={hint} error={error} />
    </div>
  );
}

export function TextAreaField({
  label,
  hint,
  error,
  ...props
}: TextareaHTMLAttributes<HTMLTextAreaElement> & { label: string; hint?: ReactNode; error?: string | null }) {
  const id = useId();
  return (
    <div className={ui.field}>
      <label htmlFor={id} className={ui.label}>
        {label}
      </label>
      <textarea
        id={id}
        className={ui.input}
        rows={4}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : hint ? `${id}-hint` : undefined}
        {...props}
      />
      <Under id={id} hint={hint} error={error} />
    </div>
  );
}

function Under({ id, hint, error }: { id: string; hint?: ReactNode; error?: string | null | undefined }) {
  if (error) {
    return (
      <span id={`${id}-error`} className={ui.fieldError}>
        {error}
      </span>
    );
  }
  return hint ? (
    <span id={`${id}-hint`} className={ui.hint}>
      {hint}
    </span>
  ) : null;
}
