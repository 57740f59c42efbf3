import { Badge } from '../../ui/admin.tsx';
import type { OccurrenceStatus, ScheduleStatus } from './types.ts';

const SCHEDULE_TONES: Record<ScheduleStatus, 'good' | 'warn' | undefined> = { active: 'good', paused: 'warn', completed: undefined };
export const SCHEDULE_STATUSES = Object.keys(SCHEDULE_TONES) as ScheduleStatus[];

export function ScheduleStatusBadge({ status }: { status: ScheduleStatus }) {
  return <Badge tone={SCHEDULE_TONES[status]}>{status}</Badge>;
}

const OCCURRENCE_TONES: Record<OccurrenceStatus, 'good' | 'bad' | 'warn' | undefined> = {
  pending: undefined,
  fired: 'good',
  failed: 'bad',
  missed: 'warn',
  skipped: 'warn',
  canceled: undefined,
};

export function OccurrenceStatusBadge({ status }: { status: OccurrenceStatus }) {
  return <Badge tone={OCCURRENCE_TONES[status]}>{status}</Badge>;
}
