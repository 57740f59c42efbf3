import { useId } from 'react';
import { previewOf, type Values } from '../inbox/compose/templates.ts';
import styles from './templates.module.css';
import type { Template } from './types.ts';

/**
 * The message as the customer will read it: a placeholder with no value yet stays `{{…}}`. Beside a
 * form it stays in view while the form scrolls (`sticky`); inside a dialog's flow it does not.
 */
export function TemplatePreview({
  template,
  values,
  label = 'Preview',
  sticky = true,
}: {
  template: Template;
  values: Values;
  label?: string;
  sticky?: boolean;
}) {
  const preview = previewOf(template, values);
  const id = useId();
  return (
    <section className={sticky ? `${styles.preview} ${styles.sticky}` : styles.preview} aria-labelledby={id} data-testid="template-preview">
      <p id={id} className={styles.previewLabel}>
        {label}
      </p>
      {preview.header && <p className={styles.previewHeader}>{preview.header}</p>}
      <p>{preview.body || <span className={styles.muted}>The body appears here as you type it.</span>}</p>
      {preview.footer && <p className={styles.muted}>{preview.footer}</p>}
      {preview.buttons.length > 0 && (
        <ul className={styles.previewButtons}>
          {preview.buttons.map((text, index) => (
            <li key={index}>{text}</li>
          ))}
        </ul>
      )}
    </section>
  );
}
