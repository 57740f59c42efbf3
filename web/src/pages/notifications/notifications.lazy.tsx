import { createLazyRoute } from '@tanstack/react-router';
import { useState } from 'react';
import { usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage, PagedList, Section, useCursorList } from '../../ui/admin.tsx';
import { Button, FilterSelect } from '../../ui/controls.tsx';
import styles from '../templates/templates.module.css';
import { notificationKeys } from './keys.ts';
import { NOTIFICATION_STATUSES, NotificationTable } from './notification-parts.tsx';
import { SendNotification } from './SendNotification.tsx';
import type { Notification } from './types.ts';

function NotificationsPage() {
  const { can } = usePermissions();
  const write = can('notifications:write');
  const [status, setStatus] = useState('');
  const [sending, setSending] = useState(false);
  const list = useCursorList<Notification>(notificationKeys.list({ status }), '/v1/notifications', { status: status || undefined });
  const empty = status
    ? `No ${status} notification. Choose another status, or any.`
    : write
      ? 'No notification yet. Send one with “Send a notification”, or through the API (POST /v1/notifications); schedules send them too.'
      : 'No notification yet. They appear here once someone sends one, through the API or a schedule.';
  return (
    <AdminPage
      title="Notifications"
      description="Template messages that must arrive on time or not at all: each is sent at its time through the number's pace, and ends expired rather than late. A batch's progress is on its page, linked from its notifications."
      actions={
        write && !sending ? (
          <Button variant="primary" onClick={() => setSending(true)}>
            Send a notification
          </Button>
        ) : null
      }
    >
      {sending && (
        <Section title="Send a notification">
          <SendNotification onDone={() => setSending(false)} />
        </Section>
      )}
      <Section title="Sent and scheduled">
        <div className={styles.stack}>
          <div className={styles.filters}>
            <FilterSelect inline={false} label="Status" value={status} options={NOTIFICATION_STATUSES} onChange={setStatus} />
          </div>
          <PagedList list={list} empty={empty}>
            {(notifications) => <NotificationTable notifications={notifications} write={write} />}
          </PagedList>
        </div>
      </Section>
    </AdminPage>
  );
}

export const Route = createLazyRoute('/app/notifications')({ component: NotificationsPage });
