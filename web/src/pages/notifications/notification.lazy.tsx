import { useQuery } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage, Section } from '../../ui/admin.tsx';
import { ErrorMessage, Loading } from '../../ui/controls.tsx';
import { dateTime, snippet } from '../inbox/compose/format.ts';
import { notificationKeys } from './keys.ts';
import { CancelNotification, cancelable, NotificationStatusBadge, ReplayNotification, UNFINISHED } from './notification-parts.tsx';
import styles from '../templates/templates.module.css';
import type { Message, Notification } from './types.ts';

/** How often a notification not yet settled is read again: its status moves as it is sent and delivered. */
const POLL_MS = 3_000;

function NotificationPage() {
  const { notificationId } = Route.useParams();
  const api = useApi();
  const { can } = usePermissions();
  const notification = useQuery({
    queryKey: notificationKeys.one(notificationId),
    queryFn: ({ signal }) => api.get<Notification>(`/v1/notifications/${notificationId}`, { signal }),
    refetchInterval: (query) => {
      const status = query.state.data?.status;
      return status && (UNFINISHED.includes(status) || status === 'sent') ? POLL_MS : false;
    },
  });
  if (notification.isPending) return <Loading />;
  if (notification.error) return <ErrorMessage error={notification.error} />;
  const n = notification.data;
  const write = can('notifications:write');
  const replayable = (n.status === 'failed' || n.status === 'expired') && !n.replayed_by;
  return (
    <AdminPage
      title={`Notification to ${n.to}`}
      description={
        <>
          <Link to="/notifications">All notifications</Link>
          {n.batch_id && (
            <>
              {' · '}
              <Link to="/notifications/batches/$batchId" params={{ batchId: n.batch_id }}>
                Its batch
              </Link>
            </>
          )}
          {n.schedule_id && (
            <>
              {' · '}
              <Link to="/schedules/$scheduleId" params={{ scheduleId: n.schedule_id }}>
                Its schedule
              </Link>
            </>
          )}
        </>
      }
      actions={
        write ? (
          <>
            {cancelable(n.status) && <CancelNotification notification={n} />}
            {replayable && <ReplayNotification notification={n} />}
          </>
        ) : null
      }
    >
      <Section title="Status">
        <dl className={styles.facts}>
          <Fact term="Status">
            <NotificationStatusBadge status={n.status} />
          </Fact>
          {n.error && (
            <Fact term="Why">
              {n.error.message} ({n.error.code})
            </Fact>
          )}
          <Fact term="Attempts">{n.attempts}</Fact>
          <Fact term="Send at">{dateTime(n.send_at)}</Fact>
          <Fact term="Expires at">{dateTime(n.expires_at)}</Fact>
          {n.sent_at && <Fact term="Sent">{dateTime(n.sent_at)}</Fact>}
          {n.delivered_at && <Fact term="Delivered">{dateTime(n.delivered_at)}</Fact>}
          {n.failed_at && <Fact term="Failed">{dateTime(n.failed_at)}</Fact>}
          {n.expired_at && <Fact term="Expired">{dateTime(n.expired_at)}</Fact>}
          {n.canceled_at && <Fact term="Canceled">{dateTime(n.canceled_at)}</Fact>}
          {n.replay_of && (
            <Fact term="Replay of">
              <Link to="/notifications/$notificationId" params={{ notificationId: n.replay_of }}>
                {n.replay_of}
              </Link>
            </Fact>
          )}
          {n.replayed_by && (
            <Fact term="Replayed by">
              <Link to="/notifications/$notificationId" params={{ notificationId: n.replayed_by }}>
                {n.replayed_by}
              </Link>
            </Fact>
          )}
        </dl>
      </Section>
      <Section title="What it sends">
        <dl className={styles.facts}>
          <Fact term="To">{n.to}</Fact>
          <Fact term="Template">
            {n.template.name} ({n.template.language}
            {n.template.category ? `, ${n.template.category}` : ''})
          </Fact>
          <Fact term="Values">{valuesText(n.template.parameters)}</Fact>
          {n.dedupe_key && <Fact term="Dedupe key">{n.dedupe_key}</Fact>}
          {Object.keys(n.metadata).length > 0 && <Fact term="Metadata">{JSON.stringify(n.metadata)}</Fact>}
        </dl>
      </Section>
      <Section title="The message">
        {n.message_id ? (
          <MessageFacts messageId={n.message_id} />
        ) : (
          <p>
            {n.status === 'canceled' || n.status === 'expired'
              ? 'None: it was never sent, so nothing reached the conversation.'
              : 'Not yet: the message is created when the notification is first sent.'}
          </p>
        )}
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

/** The placeholders' values in one line: `Ana, A-1` (a currency or a date by its fallback). */
function valuesText(parameters: Notification['template']['parameters']): string {
  const text = (value: unknown): string => {
    if (typeof value === 'string') return value;
    if (value && typeof value === 'object') {
      const record = value as Record<string, unknown>;
      const shown = record.text ?? record.fallback ?? record.code ?? record.payload;
      if (typeof shown === 'string') return shown;
      return Object.entries(record)
        .map(([key, inner]) => `${key}: ${text(inner)}`)
        .join(', ');
    }
    return String(value);
  };
  const each = (value: unknown): unknown[] => (Array.isArray(value) ? (value as unknown[]) : value === undefined ? [] : [value]);
  const parts = [...each(parameters.header), ...each(parameters.body), ...each(parameters.buttons)];
  const shown = parts.map(text);
  return shown.length > 0 ? shown.join(' · ') : 'None: the template has no placeholders.';
}

function MessageFacts({ messageId }: { messageId: string }) {
  const api = useApi();
  const message = useQuery({
    queryKey: notificationKeys.message(messageId),
    queryFn: ({ signal }) => api.get<Message>(`/v1/messages/${messageId}`, { signal }),
  });
  if (message.isPending) return <Loading />;
  if (message.error) return <ErrorMessage error={message.error} />;
  const m = message.data;
  return (
    <dl className={styles.facts}>
      <Fact term="Message">{snippet(m, 80)}</Fact>
      <Fact term="Its status">{m.status}</Fact>
      {m.error && (
        <Fact term="Provider's reason">
          {m.error.title ?? m.error.message} {m.error.code !== null ? `(${m.error.code})` : ''}
        </Fact>
      )}
      <Fact term="Conversation">
        <Link to="/inbox/$conversationId" params={{ conversationId: m.conversation_id }}>
          Open it in the inbox
        </Link>
      </Fact>
    </dl>
  );
}

export const Route = createLazyRoute('/app/notifications/$notificationId')({ component: NotificationPage });
