import { useId, type SelectHTMLAttributes } from 'react';
import styles from './automations.module.css';

/** A labelled select (the label names the select alone, not its options); `inline` puts the label beside it, for a list's filter. */
export function SelectField({ label, inline, children, ...props }: SelectHTMLAttributes<HTMLSelectElement> & { label: string; inline?: boolean }) {
  const id = useId();
  return (
    <div className={inline ? styles.inlineField : styles.selectField}>
      <label htmlFor={id}>{label}</label>
      <select id={id} {...props}>
        {children}
      </select>
    </div>
  );
}
