import type { Connection } from '../../api/types.ts';
import styles from './connections.module.css';

type Onboarding = NonNullable<Connection['onboarding']>;

const STATUS_TEXT: Record<Onboarding['status'], string> = {
  pending: 'Waiting for the business app to share its history',
  importing: 'Importing',
  completed: 'Imported',
  failed: 'Failed',
};

/**
 * A coexistence number's history import (docs/connections.md): the provider's own progress as a
 * progress bar, kept current by the `onboarding.*` events (useOnboardingUpdates).
 */
export function ImportProgress({ onboarding, label = 'History import', compact = false }: { onboarding: Onboarding; label?: string; compact?: boolean }) {
  const summary =
    onboarding.status === 'failed'
      ? `${STATUS_TEXT.failed}: ${onboarding.failure_reason ?? 'no reason given'}`
      : `${STATUS_TEXT[onboarding.status]}: ${onboarding.progress} %, ${onboarding.messages_imported} ${onboarding.messages_imported === 1 ? 'message' : 'messages'}`;
  return (
    <div className={compact ? styles.importCompact : styles.import} data-status={onboarding.status}>
      <div
        className={styles.progress}
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={onboarding.progress}
        aria-valuetext={summary}
      >
        <div className={styles.progressFill} style={{ width: `${onboarding.progress}%` }} />
      </div>
      <span className={styles.importText}>{summary}</span>
    </div>
  );
}
