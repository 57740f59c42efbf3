import { useId, type ButtonHTMLAttributes, type InputHTMLAttributes, type ReactNode, type SelectHTMLAttributes, type TextareaHTMLAttributes } from 'react';
import { ApiError, NetworkError } from '../api/client.ts';
import styles from './ui.module.css';

export function Button({ variant, className, ...props }: ButtonHTMLAttributes<HTMLButtonElement> & { variant?: 'primary' | 'danger' }) {
  const classes = [styles.button, variant ? styles[variant] : '', className ?? ''].filter(Boolean).join(' ');
  return <button type="button" {...props} className={classes} />;
}

interface FieldProps {
  label: string;
  hint?: ReactNode;
  error?: string | null;
  /** The label beside the control rather than above it (a list's filter). */
  inline?: boolean;
}

/**
 * The frame of every labelled control: the label tied to it, then the API's complaint about it or
 * else its hint, each tied to the control by aria-describedby.
 */
function Field({
  label,
  hint,
  error,
  inline,
  render,
}: FieldProps & { render: (control: { id: string; 'aria-invalid'?: true; 'aria-describedby'?: string }) => ReactNode }) {
  const id = useId();
  const described = error ? `${id}-error` : hint ? `${id}-hint` : undefined;
  return (
    <div className={inline ? styles.inlineField : styles.field}>
      <label htmlFor={id} className={styles.label}>
        {label}
      </label>
      {render({ id, ...(error ? { 'aria-invalid': true as const } : {}), ...(described ? { 'aria-describedby': described } : {}) })}
      {hint && !error && (
        <span id={`${id}-hint`} className={styles.hint}>
          {hint}
        </span>
      )}
      {error && (
        <span id={`${id}-error`} className={styles.fieldError}>
          {error}
        </span>
      )}
    </div>
  );
}

/** A labelled input; the label is always there for screen readers, the error is tied to the input. */
export function TextField({ label, hint, error, inline, ...props }: InputHTMLAttributes<HTMLInputElement> & FieldProps) {
  return <Field label={label} hint={hint} error={error} inline={inline} render={(control) => <input className={styles.input} {...control} {...props} />} />;
}

export function SelectField({ label, hint, error, inline, children, ...props }: SelectHTMLAttributes<HTMLSelectElement> & FieldProps) {
  return (
    <Field
      label={label}
      hint={hint}
      error={error}
      inline={inline}
      render={(control) => (
        <select className={styles.input} {...control} {...props}>
          {children}
        </select>
      )}
    />
  );
}

/**
 * A list's filter on one field: "Any" (the empty value) or one of `options`, each shown as
 * `optionLabel` says; beside the list's title unless `inline` is false.
 */
export function FilterSelect<T extends string>({
  label,
  value,
  options,
  optionLabel = (option) => option,
  onChange,
  inline = true,
}: {
  label: string;
  value: string;
  options: readonly T[];
  optionLabel?: (option: T) => string;
  onChange: (value: T | '') => void;
  inline?: boolean;
}) {
  return (
    <SelectField inline={inline} label={label} value={value} onChange={(e) => onChange(e.target.value as T | '')}>
      <option value="">Any</option>
      {options.map((option) => (
        <option key={option} value={option}>
          {optionLabel(option)}
        </option>
      ))}
    </SelectField>
  );
}

export function TextAreaField({ label, hint, error, inline, ...props }: TextareaHTMLAttributes<HTMLTextAreaElement> & FieldProps) {
  return (
    <Field
      label={label}
      hint={hint}
      error={error}
      inline={inline}
      render={(control) => <textarea className={styles.input} rows={4} {...control} {...props} />}
    />
  );
}

/** An API error as the API put it: its message, and a link to the code's reference page. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof ApiError) {
    return (
      <div role="alert" className={styles.alert}>
        {error.message}{' '}
        <a href={error.body.doc_url} target="_blank" rel="noreferrer">
          ({error.code})
        </a>
      </div>
    );
  }
  const message = error instanceof NetworkError || error instanceof Error ? error.message : 'Something went wrong.';
  return (
    <div role="alert" className={styles.alert}>
      {message}
    </div>
  );
}

/** The field an API error names (`param`, a JSON pointer or a query name), for inline display. */
export function errorFor(error: unknown, param: string): string | null {
  if (!(error instanceof ApiError)) return null;
  const named = error.body.param ?? '';
  return named === param || named === `/${param}` ? error.message : null;
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className={styles.empty}>{children}</div>;
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div className={styles.spinner} role="status">
      {label}
    </div>
  );
}

export function Notice({ children }: { children: ReactNode }) {
  return (
    <div className={styles.notice} role="note">
      {children}
    </div>
  );
}
