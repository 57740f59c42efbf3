import { useId } from 'react';
import { ApiError } from '../../api/client.ts';
import styles from './automations.module.css';

/** A JSON text as typed: its value when it parses, or why not (the browser's own words, with the position). */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : 'This is not JSON.' };
  }
}

export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/**
 * A labelled textarea for a JSON document (a definition, a run's input), which says at once when the
 * text is not JSON, before anything is sent; what the API finds wrong with it is shown by `Problems`.
 */
export function JsonField({
  label,
  value,
  onChange,
  rows = 12,
  hint,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  rows?: number;
  hint?: string;
}) {
  const id = useId();
  const parsed = value.trim() === '' ? null : parseJson(value);
  const invalid = parsed !== null && !parsed.ok;
  const describedBy = [hint ? `${id}-hint` : '', invalid ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  const format = () => {
    if (parsed?.ok) onChange(prettyJson(parsed.value));
  };
  return (
    <div className={styles.jsonField}>
      <div className={styles.jsonHeader}>
        <label htmlFor={id}>{label}</label>
        <button type="button" className={styles.linkButton} onClick={format} disabled={!parsed?.ok}>
          Format {label.toLowerCase()}
        </button>
      </div>
      <textarea
        id={id}
        className={styles.code}
        rows={rows}
        spellCheck={false}
        value={value}
        aria-invalid={invalid || undefined}
        aria-describedby={describedBy}
        onChange={(event) => onChange(event.target.value)}
      />
      {hint && (
        <span id={`${id}-hint`} className={styles.hint}>
          {hint}
        </span>
      )}
      {invalid && (
        <span id={`${id}-error`} className={styles.fieldError}>
          Not valid JSON: {parsed.message}
        </span>
      )}
    </div>
  );
}

interface Detail {
  param: string;
  message: string;
}

function detailsOf(error: unknown): Detail[] {
  if (!(error instanceof ApiError) || !Array.isArray(error.body.details)) return [];
  return (error.body.details as unknown[]).filter(
    (detail): detail is Detail => typeof detail === 'object' && detail !== null && typeof (detail as Detail).param === 'string',
  );
}

/**
 * The problems an API refusal lists (`details`, up to ten), each at its JSON pointer into the request
 * (`/definition/steps/2/next`): where to look in the JSON above. Nothing when the refusal lists none.
 */
export function Problems({ error, title = 'What the API found' }: { error: unknown; title?: string }) {
  const details = detailsOf(error);
  if (details.length === 0) return null;
  return (
    <div className={styles.problems}>
      <strong>{title}:</strong>
      <ul>
        {details.map((detail, index) => (
          <li key={index}>
            <code>{detail.param}</code>: {detail.message}
          </li>
        ))}
      </ul>
    </div>
  );
}
