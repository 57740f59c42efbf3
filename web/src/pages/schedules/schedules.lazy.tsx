import { createLazyRoute, Link } from '@tanstack/react-router';
import { useState } from 'react';
import { usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { Button, FilterSelect } from '../../ui/controls.tsx';
import { dateTime } from '../inbox/compose/format.ts';
import styles from '../templates/templates.module.css';
import { scheduleKeys } from './keys.ts';
import { SCHEDULE_STATUSES, ScheduleStatusBadge } from './schedule-parts.tsx';
import { ScheduleForm } from './ScheduleForm.tsx';
import type { Schedule } from './types.ts';

function SchedulesPage() {
  const { can } = usePermissions();
  const write = can('notifications:write');
  const [status, setStatus] = useState('');
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<Schedule | null>(null);
  const list = useCursorList<Schedule>(scheduleKeys.list(status), '/v1/schedules', { status: status || undefined });
  const empty = status
    ? `No ${status} schedule. Choose another status, or any.`
    : write
      ? 'No schedule yet. Create one with “New schedule”: a template sent at set times (once, on a cron expression, or every so often).'
      : 'No schedule yet. An owner or admin creates them.';
  return (
    <AdminPage
      title="Schedules"
      description="Templates sent at set times: once, on a cron expression in a time zone, or every so often. Each time is an occurrence, which sends notifications."
      actions={
        write && !creating ? (
          <Button variant="primary" onClick={() => setCreating(true)}>
            New schedule
          </Button>
        ) : null
      }
    >
      {creating && (
        <Section title="New schedule">
          <ScheduleForm
            onCancel={() => setCreating(false)}
            onCreated={(schedule) => {
              setCreating(false);
              setCreated(schedule);
            }}
          />
        </Section>
      )}
      {created && (
        <p role="status" className={styles.success}>
          Created:{' '}
          <Link to="/schedules/$scheduleId" params={{ scheduleId: created.id }}>
            {created.name ?? created.description}
          </Link>
          {created.next_occurrence_at ? `, first occurrence ${dateTime(created.next_occurrence_at)}.` : '.'}
        </p>
      )}
      <Section title="All schedules">
        <div className={styles.stack}>
          <div className={styles.filters}>
            <FilterSelect inline={false} label="Status" value={status} options={SCHEDULE_STATUSES} onChange={setStatus} />
          </div>
          <PagedList list={list} empty={empty}>
            {(schedules) => (
              <table className={tableClass}>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">When</th>
                    <th scope="col">Status</th>
                    <th scope="col">Next</th>
                    <th scope="col">Occurrences</th>
                  </tr>
                </thead>
                <tbody>
                  {schedules.map((schedule) => (
                    <tr key={schedule.id}>
                      <td>
                        <Link to="/schedules/$scheduleId" params={{ scheduleId: schedule.id }}>
                          {schedule.name ?? 'Unnamed schedule'}
                        </Link>
                      </td>
                      <td>{schedule.description}</td>
                      <td>
                        <ScheduleStatusBadge status={schedule.status} />
                        {schedule.paused_reason && <span className={styles.reason}>{schedule.paused_reason}</span>}
                      </td>
                      <td>{schedule.next_occurrence_at ? dateTime(schedule.next_occurrence_at) : '—'}</td>
                      <td>
                        {schedule.occurrence_count}
                        {schedule.max_occurrences !== null ? ` of ${schedule.max_occurrences}` : ''}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </PagedList>
        </div>
      </Section>
    </AdminPage>
  );
}

export const Route = createLazyRoute('/app/schedules')({ component: SchedulesPage });
