import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import { useEffect } from 'react';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { ErrorMessage, Loading } from '../../ui/controls.tsx';
import { dateTime } from '../inbox/compose/format.ts';
import { notificationKeys } from './keys.ts';
import { NOTIFICATION_STATUSES, NotificationTable, UNFINISHED } from './notification-parts.tsx';
import styles from './notifications.module.css';
import type { Notification, NotificationBatch } from './types.ts';

/** How often a batch under way is read again (its counts are computed on each read). */
const POLL_MS = 2_000;

const unfinished = (batch: NotificationBatch) => UNFINISHED.reduce((sum, status) => sum + batch.counts[status], 0);

function BatchPage() {
  const { batchId } = Route.useParams();
  const api = useApi();
  const queryClient = useQueryClient();
  const { can } = usePermissions();
  const batch = useQuery({
    queryKey: notificationKeys.batch(batchId),
    queryFn: ({ signal }) => api.get<NotificationBatch>(`/v1/notifications/batches/${batchId}`, { signal }),
    // Read again while anything is still to be sent, or sent and waiting for its delivery.
    refetchInterval: (query) => (query.state.data && unfinished(query.state.data) + query.state.data.counts.sent > 0 ? POLL_MS : false),
  });
  const list = useCursorList<Notification>(notificationKeys.list({ batch_id: batchId }), '/v1/notifications', { batch_id: batchId });
  // The rows follow the counts: when a count moves, the notifications shown are read again.
  const counts = batch.data ? JSON.stringify(batch.data.counts) : '';
  useEffect(() => {
    if (counts) void queryClient.invalidateQueries({ queryKey: notificationKeys.list({ batch_id: batchId }) });
  }, [counts, batchId, queryClient]);

  if (batch.isPending) return <Loading />;
  if (batch.error) return <ErrorMessage error={batch.error} />;
  const b = batch.data;
  return (
    <AdminPage
      title={`Batch: ${b.template.name} to ${b.recipient_count} recipient${b.recipient_count === 1 ? '' : 's'}`}
      description={
        <>
          <Link to="/notifications">All notifications</Link> · {b.template.name} ({b.template.language}) · created {dateTime(b.created_at)} · sends from{' '}
          {dateTime(b.send_at)}, not after {dateTime(b.expires_at)} · {b.mode === 'partial' ? 'partial' : 'all or nothing'}
          {b.schedule_id && (
            <>
              {' · '}
              <Link to="/schedules/$scheduleId" params={{ scheduleId: b.schedule_id }}>
                Its schedule
              </Link>
            </>
          )}
        </>
      }
    >
      <Section title="Progress">
        <Progress batch={b} />
      </Section>
      {b.errors.length > 0 && (
        <Section title="Recipients refused">
          <p>These recipients were not created; the others were.</p>
          <table className={tableClass}>
            <thead>
              <tr>
                <th scope="col">Recipient</th>
                <th scope="col">Why</th>
              </tr>
            </thead>
            <tbody>
              {b.errors.map((error) => (
                <tr key={error.index}>
                  <td>#{error.index + 1}</td>
                  <td>
                    {error.message} ({error.code})
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      )}
      <Section title="Its notifications">
        <PagedList list={list} empty="This batch created no notification: every recipient was refused (see above).">
          {(notifications) => <NotificationTable notifications={notifications} write={can('notifications:write')} showBatch={false} />}
        </PagedList>
      </Section>
    </AdminPage>
  );
}

function Progress({ batch }: { batch: NotificationBatch }) {
  const { counts } = batch;
  const total = batch.notification_ids.length;
  const left = unfinished(batch);
  const done = total - left;
  const share = (count: number) => `${total === 0 ? 0 : (count / total) * 100}%`;
  return (
    <>
      <div
        className={styles.progress}
        role="progressbar"
        aria-label="Batch progress"
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={done}
        aria-valuetext={`${done} of ${total} settled`}
      >
        <span className={styles.done} style={{ width: share(counts.sent + counts.delivered) }} />
        <span className={styles.failed} style={{ width: share(counts.failed + counts.expired) }} />
        <span className={styles.stopped} style={{ width: share(counts.canceled) }} />
      </div>
      <p role="status" data-testid="batch-summary">
        {left > 0
          ? `${done} of ${total} settled; ${left} still to send. This page reads the batch again every few seconds.`
          : counts.sent > 0
            ? `All ${total} settled; ${counts.sent} sent and waiting for the provider's delivery report.`
            : `Finished: all ${total} settled.`}
      </p>
      <ul className={styles.counts} aria-label="Notifications by status">
        {NOTIFICATION_STATUSES.map((status) => (
          <li key={status} data-testid={`count-${status}`}>
            <strong>{counts[status]}</strong> {status}
          </li>
        ))}
      </ul>
    </>
  );
}

export const Route = createLazyRoute('/app/notifications/batches/$batchId')({ component: BatchPage });
