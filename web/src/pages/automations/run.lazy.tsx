import { useInfiniteQuery, useQuery, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import type { ListPage } from '../../api/types.ts';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { useLiveEvents } from '../../live/events.tsx';
import { AdminPage, Badge, ConfirmButton, Section } from '../../ui/admin.tsx';
import { Button, Empty, ErrorMessage, Loading } from '../../ui/controls.tsx';
import { formatTime, isActive, RUN_EVENT_TYPES, runKeys, toneOf, words, type Run, type RunEvent } from './api.ts';
import { prettyJson } from './JsonField.tsx';
import { runResult } from './RunsSection.tsx';
import { Timeline } from './Timeline.tsx';
import styles from './automations.module.css';

function RunPage() {
  const { runId } = Route.useParams();
  const api = useApi();
  const queryClient = useQueryClient();
  const run = useQuery({ queryKey: runKeys.one(runId), queryFn: () => api.get<Run>(`/v1/runs/${runId}`) });
  // The run started, ended, or its approval was asked or decided: the run and its log are read again.
  useLiveEvents(RUN_EVENT_TYPES, (event) => {
    const object = event?.data.object;
    if (object && object.id !== runId && object.run_id !== runId) return;
    void queryClient.invalidateQueries({ queryKey: runKeys.one(runId) });
  });
  if (run.isPending) return <Loading />;
  if (run.error) {
    return (
      <AdminPage title="Run">
        <ErrorMessage error={run.error} />
      </AdminPage>
    );
  }
  return <RunView run={run.data} />;
}

function RunView({ run }: { run: Run }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const permissions = usePermissions();
  const refresh = () => queryClient.invalidateQueries({ queryKey: runKeys.one(run.id) });
  return (
    <AdminPage
      title={`Run ${run.id}`}
      description={
        <>
          Of{' '}
          <Link to="/automations/$automationId" params={{ automationId: run.automation_id }}>
            its automation
          </Link>
          , version {run.version}
          {run.dry_run ? ' · a dry run: nothing it did reached anyone' : ''}
        </>
      }
      actions={
        <>
          <Button onClick={() => void refresh()}>Refresh</Button>
          {permissions.can('runs:write') && isActive(run.status) && (
            <ConfirmButton
              label="Cancel run"
              title="Cancel this run?"
              consequence="A step executing now finishes; nothing after it runs. The run ends canceled, a pending approval of it is canceled, and its conversation goes back to API control."
              confirmLabel="Cancel run"
              onConfirm={async () => {
                queryClient.setQueryData(runKeys.one(run.id), await api.post<Run>(`/v1/runs/${run.id}/cancel`));
                await refresh();
              }}
            />
          )}
        </>
      }
    >
      <Section title="Summary">
        <dl className={styles.facts}>
          <dt>Status</dt>
          <dd>
            <Badge tone={toneOf(run.status)}>{words(run.status)}</Badge> {runResult(run)}
          </dd>
          <dt>Trigger</dt>
          <dd>{words(run.trigger.type)}</dd>
          <dt>Current step</dt>
          <dd>{run.current_step_id ?? '—'}</dd>
          {run.waiting_for && (
            <>
              <dt>Waiting for</dt>
              <dd>
                {words(run.waiting_for.type)}
                {run.waiting_for.until && ` until ${formatTime(run.waiting_for.until)}`}
                {run.waiting_for.type === 'approval' && permissions.administer && (
                  <>
                    {' '}
                    · <Link to="/approvals">decide in Approvals</Link>
                  </>
                )}
              </dd>
            </>
          )}
          <dt>Conversation</dt>
          <dd>
            {run.conversation_id ? (
              <Link to="/inbox/$conversationId" params={{ conversationId: run.conversation_id }} search={{}}>
                {run.conversation_id}
              </Link>
            ) : (
              'None'
            )}
          </dd>
          <dt>Steps executed</dt>
          <dd>{run.steps_executed}</dd>
          <dt>Started</dt>
          <dd>{formatTime(run.started_at)}</dd>
          <dt>Finished</dt>
          <dd>{formatTime(run.finished_at)}</dd>
          <dt>Times out</dt>
          <dd>{formatTime(run.timeout_at)}</dd>
        </dl>
        <div className={styles.row}>
          <JsonBlock label="Input" value={run.input} />
          <JsonBlock label="Variables" value={run.variables} />
        </div>
      </Section>
      <RunEvents runId={run.id} />
    </AdminPage>
  );
}

function JsonBlock({ label, value }: { label: string; value: unknown }) {
  return (
    <figure className={styles.jsonBlock}>
      <figcaption>{label}</figcaption>
      <pre>{prettyJson(value)}</pre>
    </figure>
  );
}

/** The log, 100 entries a page in order, paged by `seq` (`after_seq`: the API's cursor for this list). */
function RunEvents({ runId }: { runId: string }) {
  const api = useApi();
  const events = useInfiniteQuery({
    queryKey: runKeys.events(runId),
    initialPageParam: 0,
    queryFn: ({ pageParam, signal }) => api.get<ListPage<RunEvent>>(`/v1/runs/${runId}/events`, { query: { after_seq: pageParam }, signal }),
    getNextPageParam: (last) => (last.has_more && last.next_cursor ? Number(last.next_cursor) : undefined),
  });
  const entries = events.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <Section title="Timeline">
      {events.isPending ? (
        <Loading />
      ) : events.error ? (
        <ErrorMessage error={events.error} />
      ) : entries.length === 0 ? (
        <Empty>Nothing logged yet: the run is queued.</Empty>
      ) : (
        <>
          <Timeline events={entries} />
          {events.hasNextPage && (
            <Button onClick={() => void events.fetchNextPage()} disabled={events.isFetchingNextPage}>
              {events.isFetchingNextPage ? 'Loading…' : 'Load more'}
            </Button>
          )}
        </>
      )}
    </Section>
  );
}

export const Route = createLazyRoute('/app/runs/$runId')({ component: RunPage });
