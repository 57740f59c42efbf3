import { useId, type ButtonHTMLAttributes, type InputHTMLAttributes, type ReactNode } from 'react';
import { ApiError, NetworkError } from '../api/client.ts';
import styles from './ui.module.css';

export function Button({ variant, className, ...props }: ButtonHTMLAttributes<HTMLButtonElement> & { variant?: 'primary' | 'danger' }) {
  const classes = [styles.button, variant ? styles[variant] : '', className ?? ''].filter(Boolean).join(' ');
  return <button type="button" {...props} className={classes} />;
}

/** A labelled input; the label is always there for screen readers, the error is tied to the input. */
export function TextField({
  label,
  hint,
  error,
  ...props
}: InputHTMLAttributes<HTMLInputElement> & { label: string; hint?: ReactNode; error?: string | null }) {
  const id = useId();
  return (
    <div className={styles.field}>
      <label htmlFor={id} className={styles.label}>
        {label}
      </label>
      <input
        id={id}
        className={styles.input}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : hint ? `${id}-hint` : undefined}
        {...props}
      />
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
