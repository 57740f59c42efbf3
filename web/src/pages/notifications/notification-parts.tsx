import { useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useApi } from '../../auth/SessionContext.tsx';
import { Badge, ConfirmButton, tableClass } from '../../ui/admin.tsx';
import { dateTime } from '../inbox/compose/format.ts';
import { notificationKeys } from './keys.ts';
import type { Notification, NotificationStatus } from './types.ts';

/** Every status, in the order a notification goes through them, with the tone it is shown in. */
const TONES: Record<NotificationStatus, 'good' | 'bad' | 'warn' | undefined> = {
  scheduled: undefined,
  queued: undefined,
  sending: 'warn',
  sent: 'good',
  delivered: 'good',
  failed: 'bad',
  expired: 'bad',
  canceled: undefined,
};
export const NOTIFICATION_STATUSES = Object.keys(TONES) as NotificationStatus[];

/** Not sent yet: still waiting for its time or its turn (and so still cancelable). */
export const cancelable = (status: NotificationStatus) => status === 'scheduled' || status === 'queued';
/** Handed to the provider or over: what a batch's progress counts as done. */
export const UNFINISHED: readonly NotificationStatus[] = ['scheduled', 'queued', 'sending'];

export function NotificationStatusBadge({ status }: { status: NotificationStatus }) {
  return <Badge tone={TONES[status]}>{status}</Badge>;
}

export function useRefreshNotifications() {
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: notificationKeys.all });
}

export function CancelNotification({ notification }: { notification: Notification }) {
  const api = useApi();
  const refresh = useRefreshNotifications();
  return (
    <ConfirmButton
      label="Cancel sending"
      title={`Cancel the notification to ${notification.to}?`}
      consequence={`It will not be sent: it ends canceled and its send leaves the number's queue. Nothing reaches ${notification.to}, and a canceled notification cannot be resumed (send a new one instead).`}
      confirmLabel="Cancel notification"
      onConfirm={async () => {
        await api.post(`/v1/notifications/${notification.id}/cancel`);
        await refresh();
      }}
    />
  );
}

export function ReplayNotification({ notification }: { notification: Notification }) {
  const api = useApi();
  const refresh = useRefreshNotifications();
  const navigate = useNavigate();
  return (
    <ConfirmButton
      label="Replay"
      title={`Send the notification to ${notification.to} again?`}
      consequence={`A new notification sends ${notification.template.name} to ${notification.to} now, with the same values and a fresh expiry (the template must still be approved). This one stays ${notification.status} and links to the new one. A notification is replayed once.`}
      confirmLabel="Send again"
      onConfirm={async () => {
        const replay = await api.post<Notification>(`/v1/notifications/${notification.id}/replay`, {});
        await refresh();
        await navigate({ to: '/notifications/$notificationId', params: { notificationId: replay.id } });
      }}
    />
  );
}

/** A page of notifications: each links to its detail; unsent ones can be canceled by those who may write. */
export function NotificationTable({ notifications, write, showBatch = true }: { notifications: Notification[]; write: boolean; showBatch?: boolean }) {
  return (
    <table className={tableClass}>
      <thead>
        <tr>
          <th scope="col">To</th>
          <th scope="col">Template</th>
          <th scope="col">Status</th>
          <th scope="col">Send at</th>
          <th scope="col">Attempts</th>
          {showBatch && <th scope="col">Batch</th>}
          {write && <th scope="col">Actions</th>}
        </tr>
      </thead>
      <tbody>
        {notifications.map((notification) => (
          <tr key={notification.id}>
            <td>
              <Link to="/notifications/$notificationId" params={{ notificationId: notification.id }}>
                {notification.to}
              </Link>
            </td>
            <td>
              {notification.template.name} ({notification.template.language})
            </td>
            <td>
              <NotificationStatusBadge status={notification.status} />
            </td>
            <td>{dateTime(notification.send_at)}</td>
            <td>{notification.attempts}</td>
            {showBatch && (
              <td>
                {notification.batch_id ? (
                  <Link to="/notifications/batches/$batchId" params={{ batchId: notification.batch_id }}>
                    Batch
                  </Link>
                ) : (
                  '—'
                )}
              </td>
            )}
            {write && <td>{cancelable(notification.status) && <CancelNotification notification={notification} />}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
