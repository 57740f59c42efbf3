import { useId, type ReactNode, type SelectHTMLAttributes } from 'react';
import styles from './developers.module.css';

/** A labelled select, its hint or the API's complaint about it tied to it (TextField's sibling). */
export function SelectField({
  label,
  hint,
  error,
  children,
  ...props
}: SelectHTMLAttributes<HTMLSelectElement> & { label: string; hint?: ReactNode; error?: string | null }) {
  const id = useId();
  const described = error ? `${id}-error` : hint ? `${id}-hint` : undefined;
  return (
    <div className={styles.field}>
      <label htmlFor={id}>{label}</label>
      <select id={id} className={styles.select} aria-invalid={error ? true : undefined} aria-describedby={described} {...props}>
        {children}
      </select>
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

/** One radio button or checkbox with its label (and an optional line saying what it means). */
export function Choice({
  type,
  name,
  label,
  detail,
  checked,
  onChange,
  disabled,
}: {
  type: 'radio' | 'checkbox';
  name: string;
  label: ReactNode;
  detail?: ReactNode;
  checked: boolean;
  onChange: (checked: boolean) => void;
  disabled?: boolean;
}) {
  return (
    <label className={styles.choice}>
      <input type={type} name={name} checked={checked} disabled={disabled} onChange={(event) => onChange(event.target.checked)} />
      <span>
        {label}
        {detail && <span className={styles.muted}> — {detail}</span>}
      </span>
    </label>
  );
}

/** A group of choices under a legend: how a screen reader hears the question they answer. */
export function ChoiceGroup({ legend, hint, children }: { legend: string; hint?: ReactNode; children: ReactNode }) {
  return (
    <fieldset className={styles.fieldset}>
      <legend>{legend}</legend>
      {hint && <span className={styles.hint}>{hint}</span>}
      {children}
    </fieldset>
  );
}
