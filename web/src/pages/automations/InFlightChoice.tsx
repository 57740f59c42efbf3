import { useId } from 'react';
import styles from './automations.module.css';

export type InFlight = 'keep' | 'cancel' | 'migrate';

/** What each policy does to the runs already started (docs/automations.md#deploying), one line each. */
const POLICIES: Record<InFlight, { label: string; effect: string }> = {
  keep: { label: 'Keep', effect: 'Runs already started finish on the version they started on.' },
  cancel: { label: 'Cancel', effect: 'Runs already started end now, canceled; their conversations go back to the API.' },
  migrate: {
    label: 'Migrate',
    effect: 'Waiting and paused runs whose current step exists with the same type in the new version move onto it; the others are kept.',
  },
};

/** The `in_flight` choice of a deploy, a rollback (all three) or a disable (keep or cancel: nothing to migrate to). */
export function InFlightChoice({ value, onChange, options }: { value: InFlight; onChange: (value: InFlight) => void; options: readonly InFlight[] }) {
  const name = useId();
  return (
    <fieldset className={styles.choices}>
      <legend>Runs in flight</legend>
      {options.map((option) => (
        <label key={option} className={styles.choice}>
          <input type="radio" name={name} value={option} checked={value === option} onChange={() => onChange(option)} />
          <span>
            <strong>{POLICIES[option].label}</strong> — {POLICIES[option].effect}
          </span>
        </label>
      ))}
    </fieldset>
  );
}
