import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link, useNavigate } from '@tanstack/react-router';
import { useState, type FormEvent, type ReactNode } from 'react';
import type { ListPage } from '../../api/types.ts';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage, ConfirmButton, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { Button, ErrorMessage, Loading, TextField, errorFor } from '../../ui/controls.tsx';
import { dateTime } from '../inbox/compose/format.ts';
import styles from '../templates/templates.module.css';
import { scheduleKeys } from './keys.ts';
import { occurrenceText } from './recurrence.ts';
import { draftOf, readDraft, RecurrenceFields, type RecurrenceDraft } from './RecurrenceFields.tsx';
import { OccurrenceStatusBadge, ScheduleStatusBadge } from './schedule-parts.tsx';
import type { Schedule, ScheduleOccurrence, ScheduleTarget, UpdateScheduleInput } from './types.ts';

const UPCOMING = 5;

function SchedulePage() {
  const { scheduleId } = Route.useParams();
  const api = useApi();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const { can } = usePermissions();
  const write = can('notifications:write');
  const [editing, setEditing] = useState(false);
  const schedule = useQuery({
    queryKey: scheduleKeys.one(scheduleId),
    queryFn: ({ signal }) => api.get<Schedule>(`/v1/schedules/${scheduleId}`, { signal }),
  });
  const changed = async (updated: Schedule) => {
    queryClient.setQueryData(scheduleKeys.one(scheduleId), updated);
    await queryClient.invalidateQueries({ queryKey: scheduleKeys.all });
  };
  const setStatus = useMutation({
    mutationFn: (status: 'active' | 'paused') => api.patch<Schedule>(`/v1/schedules/${scheduleId}`, { status }),
    onSuccess: changed,
  });
  if (schedule.isPending) return <Loading />;
  if (schedule.error) return <ErrorMessage error={schedule.error} />;
  const s = schedule.data;
  const refresh = () => queryClient.invalidateQueries({ queryKey: scheduleKeys.all });
  return (
    <AdminPage
      title={s.name ?? 'Unnamed schedule'}
      description={
        <>
          <Link to="/schedules">All schedules</Link> · {s.description}
        </>
      }
      actions={
        write ? (
          <>
            {s.status === 'active' && (
              <Button onClick={() => setStatus.mutate('paused')} disabled={setStatus.isPending}>
                Pause schedule
              </Button>
            )}
            {s.status === 'paused' && (
              <Button onClick={() => setStatus.mutate('active')} disabled={setStatus.isPending}>
                Resume schedule
              </Button>
            )}
            {!editing && <Button onClick={() => setEditing(true)}>Edit schedule</Button>}
            <ConfirmButton
              label="Delete schedule"
              title={`Delete ${s.name ?? 'this schedule'}?`}
              consequence="Nothing more fires: its next occurrence is withdrawn and the schedule leaves every list. The notifications it already sent stay, and keep naming it. This cannot be undone."
              confirmLabel="Delete schedule"
              onConfirm={async () => {
                await api.delete(`/v1/schedules/${scheduleId}`);
                queryClient.removeQueries({ queryKey: scheduleKeys.one(scheduleId) });
                await queryClient.invalidateQueries({ queryKey: scheduleKeys.all });
                await navigate({ to: '/schedules' });
              }}
            />
          </>
        ) : null
      }
    >
      <ErrorMessage error={setStatus.error} />
      {editing && (
        <Section title="Edit schedule">
          <EditSchedule
            schedule={s}
            onDone={async (updated) => {
              if (updated) await changed(updated);
              setEditing(false);
            }}
          />
        </Section>
      )}
      <Section title="Status">
        <dl className={styles.facts}>
          <Fact term="Status">
            <ScheduleStatusBadge status={s.status} />
            {s.paused_reason && <span className={styles.reason}>{s.paused_reason}</span>}
          </Fact>
          <Fact term="When">{s.description}</Fact>
          <Fact term="Next occurrence">
            {s.next_occurrence_at
              ? occurrenceText(new Date(s.next_occurrence_at), s.timezone)
              : s.status === 'paused'
                ? 'None while paused: resuming goes on from then, without catching up what came due meanwhile.'
                : 'None: no occurrence remains.'}
          </Fact>
          <Fact term="Last occurrence">{s.last_occurrence_at ? occurrenceText(new Date(s.last_occurrence_at), s.timezone) : 'None yet'}</Fact>
          <Fact term="Occurrences">
            {s.occurrence_count} fired or failed{s.max_occurrences !== null ? `, of at most ${s.max_occurrences}` : ''}
            {s.consecutive_failures > 0 ? ` · ${s.consecutive_failures} failed in a row (5 pause it)` : ''}
          </Fact>
          <Fact term="Start">{dateTime(s.start_at)}</Fact>
          <Fact term="End">{s.end_at ? dateTime(s.end_at) : 'None'}</Fact>
          <Fact term="If it falls behind">
            {s.overlap_policy === 'skip' ? 'only the latest due occurrence fires' : 'every due occurrence fires'}; later than{' '}
            {Math.round(s.catchup_window_seconds / 60)} minutes, an occurrence is missed
          </Fact>
        </dl>
      </Section>
      <Section title="What it sends">
        <TargetFacts target={s.target as unknown as ScheduleTarget} />
      </Section>
      <Section title="Upcoming">
        <Upcoming schedule={s} />
      </Section>
      <Section
        title="Occurrences"
        actions={
          <Button onClick={() => void refresh()} aria-label="Refresh the occurrences">
            Refresh
          </Button>
        }
      >
        <Occurrences schedule={s} />
      </Section>
    </AdminPage>
  );
}

function Fact({ term, children }: { term: string; children: ReactNode }) {
  return (
    <>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </>
  );
}

function TargetFacts({ target }: { target: ScheduleTarget }) {
  if (target.type === 'automation') {
    return (
      <dl className={styles.facts}>
        <Fact term="Each occurrence">
          starts a run of{' '}
          <Link to="/automations/$automationId" params={{ automationId: target.automation_id }}>
            the automation
          </Link>
        </Fact>
        <Fact term="Input">{JSON.stringify(target.input)}</Fact>
      </dl>
    );
  }
  const recipients = target.to ?? target.contact_ids ?? [];
  return (
    <dl className={styles.facts}>
      <Fact term="Template">{target.template.name ? `${target.template.name} (${target.template.language})` : target.template.id}</Fact>
      <Fact term="To">
        {recipients.slice(0, 10).join(', ')}
        {recipients.length > 10 ? ` and ${recipients.length - 10} more` : ''} ({recipients.length === 1 ? 'one notification' : 'a batch'} each time)
      </Fact>
      {target.parameters?.body !== undefined && <Fact term="Values">{JSON.stringify(target.parameters.body)}</Fact>}
    </dl>
  );
}

/** The service's own next occurrences (`include=upcoming`), each with the DST note it will carry. */
function Upcoming({ schedule }: { schedule: Schedule }) {
  const api = useApi();
  const upcoming = useQuery({
    queryKey: [...scheduleKeys.upcoming(schedule.id), schedule.revision, schedule.next_occurrence_at],
    queryFn: ({ signal }) =>
      api.get<ListPage<ScheduleOccurrence>>(`/v1/schedules/${schedule.id}/occurrences`, { query: { include: 'upcoming', limit: UPCOMING }, signal }),
    // Asked in `desc` order, the computed ones come first, furthest first.
    select: (page) => page.data.filter((occurrence) => occurrence.status === 'pending').reverse(),
  });
  if (upcoming.isPending) return <Loading />;
  if (upcoming.error) return <ErrorMessage error={upcoming.error} />;
  if (upcoming.data.length === 0) {
    return <p className={styles.muted}>{schedule.status === 'active' ? 'No occurrence remains.' : `None: the schedule is ${schedule.status}.`}</p>;
  }
  return (
    <ol className={styles.occurrences} aria-label="Upcoming occurrences">
      {upcoming.data.map((occurrence) => (
        <li key={occurrence.scheduled_for}>
          {occurrenceText(new Date(occurrence.scheduled_for), schedule.timezone)}
          {occurrence.reason && <span className={styles.muted}> · {occurrence.reason}</span>}
        </li>
      ))}
    </ol>
  );
}

function Occurrences({ schedule }: { schedule: Schedule }) {
  const list = useCursorList<ScheduleOccurrence>(scheduleKeys.occurrences(schedule.id), `/v1/schedules/${schedule.id}/occurrences`);
  return (
    <PagedList list={list} empty="None yet: each time the schedule comes due, its occurrence and what it sent appear here.">
      {(occurrences) => (
        <table className={tableClass}>
          <thead>
            <tr>
              <th scope="col">Scheduled for</th>
              <th scope="col">Outcome</th>
              <th scope="col">What it did</th>
            </tr>
          </thead>
          <tbody>
            {occurrences.map((occurrence) => (
              <tr key={occurrence.id ?? occurrence.scheduled_for}>
                <td>{occurrenceText(new Date(occurrence.scheduled_for), schedule.timezone)}</td>
                <td>
                  <OccurrenceStatusBadge status={occurrence.status} />
                </td>
                <td>
                  <Outcome occurrence={occurrence} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </PagedList>
  );
}

function Outcome({ occurrence }: { occurrence: ScheduleOccurrence }) {
  const { result, error, reason } = occurrence;
  return (
    <>
      {result?.notification_id && (
        <Link to="/notifications/$notificationId" params={{ notificationId: result.notification_id }}>
          Sent a notification
        </Link>
      )}
      {result?.batch_id && (
        <Link to="/notifications/batches/$batchId" params={{ batchId: result.batch_id }}>
          Sent a batch
        </Link>
      )}
      {result?.run_id && (
        <Link to="/runs/$runId" params={{ runId: result.run_id }}>
          Started a run
        </Link>
      )}
      {error && (
        <span className={styles.problem}>
          {error.message} ({error.code})
        </span>
      )}
      {reason && <span className={styles.muted}> {reason}</span>}
    </>
  );
}

/** Changes what the form shows as changed, and nothing else (`PATCH` requeues from now on any change). */
function EditSchedule({ schedule, onDone }: { schedule: Schedule; onDone: (updated: Schedule | null) => Promise<void> }) {
  const api = useApi();
  const initial = draftOf(schedule);
  const [name, setName] = useState(schedule.name ?? '');
  const [draft, setDraft] = useState<RecurrenceDraft>(initial);
  const completed = schedule.status === 'completed';
  const save = useMutation({
    mutationFn: () => {
      const read = readDraft(draft, new Date());
      const body: UpdateScheduleInput = {};
      if (name.trim() !== (schedule.name ?? '')) body.name = name.trim() || null;
      if (read.timezone && read.timezone !== schedule.timezone) body.timezone = read.timezone;
      if (read.recurrence && JSON.stringify(read.recurrence) !== JSON.stringify(schedule.recurrence)) body.recurrence = read.recurrence;
      if (draft.startAt !== initial.startAt && read.startAt) body.start_at = read.startAt.toISOString();
      if (draft.endAt !== initial.endAt) body.end_at = read.endAt ? read.endAt.toISOString() : null;
      if (draft.maxOccurrences !== initial.maxOccurrences) body.max_occurrences = read.maxOccurrences;
      // A completed schedule stays so unless the change comes with a resume.
      if (completed) body.status = 'active';
      return api.patch<Schedule>(`/v1/schedules/${schedule.id}`, body);
    },
    onSuccess: (updated) => onDone(updated),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <form className={styles.stack} onSubmit={submit} aria-label="Edit schedule">
      <p className={styles.muted}>
        Saving computes the next occurrence again from now. What it sends and to whom is changed through the API (PATCH /v1/schedules/{'{id}'}).
      </p>
      <TextField label="Name (optional)" maxLength={200} value={name} onChange={(event) => setName(event.target.value)} error={errorFor(save.error, 'name')} />
      <RecurrenceFields draft={draft} onChange={setDraft} refusal={save.error} existing={schedule} />
      <ErrorMessage error={save.error} />
      <div className={styles.row}>
        <Button type="submit" variant="primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : completed ? 'Save and resume' : 'Save changes'}
        </Button>
        <Button onClick={() => void onDone(null)} disabled={save.isPending}>
          Cancel
        </Button>
      </div>
    </form>
  );
}

export const Route = createLazyRoute('/app/schedules/$scheduleId')({ component: SchedulePage });
