import { SelectField } from '../../ui/controls.tsx';

/** A version by number, newest first (1 to `latest`; a pruned one is refused by the API with its reason). */
export function VersionSelect({ label, latest, value, onChange }: { label: string; latest: number; value: number; onChange: (value: number) => void }) {
  const numbers = Array.from({ length: latest }, (_, index) => latest - index);
  return (
    <SelectField label={label} value={value} onChange={(event) => onChange(Number(event.target.value))}>
      {numbers.map((number) => (
        <option key={number} value={number}>
          Version {number}
        </option>
      ))}
    </SelectField>
  );
}
