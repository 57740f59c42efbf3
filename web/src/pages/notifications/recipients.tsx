import { TextAreaField } from '../../ui/controls.tsx';
import { ApiError } from '../../api/client.ts';

/** The numbers typed, one per line (or separated by commas), without spaces, brackets or dashes. */
export function recipientsOf(text: string): string[] {
  return text
    .split(/[\n,;]+/)
    .map((line) => line.replace(/[\s()-]/g, ''))
    .filter(Boolean);
}

/** A refusal that names a recipient (`/to`, `/recipients/3/to`, `/target/to/2`): shown on the field. */
export function recipientsError(error: unknown): string | null {
  if (!(error instanceof ApiError)) return null;
  return /^(\/target)?\/(to|recipients\/\d+\/to|to\/\d+)$/.test(error.body.param ?? '') ? error.message : null;
}

export function RecipientsField({ value, onChange, hint, error }: { value: string; onChange: (value: string) => void; hint: string; error: string | null }) {
  return <TextAreaField label="Recipients" required rows={3} value={value} onChange={(event) => onChange(event.target.value)} hint={hint} error={error} />;
}
