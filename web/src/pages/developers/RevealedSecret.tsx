import type { ReactNode } from 'react';
import { SecretOnce } from '../../ui/admin.tsx';
import { Button } from '../../ui/controls.tsx';
import styles from './developers.module.css';

export interface Revealed {
  title: string;
  label: string;
  value: string;
  /** What to do with it, or what happened to the one it replaces. */
  note?: ReactNode;
}

/**
 * A secret the API has just returned (a new key, a rotated key, a webhook signing secret), shown at
 * the top of the page rather than in a second dialog over the one that asked for it. It lives only
 * in the page's state: dismissing it, or leaving the page, forgets it for good.
 */
export function RevealedSecret({ revealed, onDone }: { revealed: Revealed | null; onDone: () => void }) {
  if (!revealed) return null;
  return (
    <section className={styles.revealed} aria-labelledby="revealed-secret-title" aria-live="polite">
      <h2 id="revealed-secret-title">{revealed.title}</h2>
      <SecretOnce label={revealed.label} value={revealed.value} />
      {revealed.note && <p>{revealed.note}</p>}
      <div>
        <Button variant="primary" onClick={onDone}>
          I have stored it
        </Button>
      </div>
    </section>
  );
}
