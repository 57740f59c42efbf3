import type { ReactNode } from 'react';
import styles from './developers.module.css';

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

/** A credential's scopes, folded to their count until opened. */
export function ScopeList({ scopes }: { scopes: readonly string[] }) {
  return (
    <details>
      <summary>{scopes.length} scopes</summary>
      <ul className={styles.code}>
        {scopes.map((scope) => (
          <li key={scope}>{scope}</li>
        ))}
      </ul>
    </details>
  );
}
