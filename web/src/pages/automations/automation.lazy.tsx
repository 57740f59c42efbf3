import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import { useState } from 'react';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { useLiveEvents } from '../../live/events.tsx';
import { AdminPage, Badge, Section } from '../../ui/admin.tsx';
import { ErrorMessage, Loading, Notice } from '../../ui/controls.tsx';
import { automationKeys, formatTime, RUN_EVENT_TYPES, runKeys, toneOf, words, type Automation, type Deployment } from './api.ts';
import { AutomationActions, deployedSentence } from './AutomationActions.tsx';
import { useRunsOn } from './connections.ts';
import { DryRun } from './DryRun.tsx';
import { RunsSection } from './RunsSection.tsx';
import { VersionsSection } from './VersionsSection.tsx';
import styles from './automations.module.css';

function AutomationPage() {
  const { automationId } = Route.useParams();
  const api = useApi();
  const queryClient = useQueryClient();
  const automation = useQuery({
    queryKey: automationKeys.one(automationId),
    queryFn: () => api.get<Automation>(`/v1/automations/${automationId}`),
  });
  // A run of this automation started or ended (or events were missed): its runs, and its failure count, are read again.
  useLiveEvents(RUN_EVENT_TYPES, (event) => {
    if (event && event.data.object.automation_id !== automationId) return;
    void queryClient.invalidateQueries({ queryKey: runKeys.all });
    void queryClient.invalidateQueries({ queryKey: automationKeys.one(automationId) });
  });
  if (automation.isPending) return <Loading />;
  if (automation.error) {
    return (
      <AdminPage title="Automation">
        <ErrorMessage error={automation.error} />
        <Link to="/automations">All automations</Link>
      </AdminPage>
    );
  }
  return <AutomationView automation={automation.data} />;
}

function AutomationView({ automation }: { automation: Automation }) {
  const permissions = usePermissions();
  const runsOn = useRunsOn();
  const [deployed, setDeployed] = useState<Deployment | null>(null);
  return (
    <AdminPage
      title={automation.name}
      description={
        <>
          <Link to="/automations">Automations</Link>
          {automation.description ? ` · ${automation.description}` : ''}
        </>
      }
    >
      <Section title="Overview">
        <dl className={styles.facts}>
          <dt>Status</dt>
          <dd>
            <Badge tone={toneOf(automation.status)}>{automation.status}</Badge>
            {automation.disabled_reason === 'consecutive_failures' && ' after 10 failed runs in a row: fix what failed, then enable it again'}
          </dd>
          <dt>Deployed version</dt>
          <dd>
            {automation.deployed_version ?? 'None yet'}
            {automation.previous_deployed_version !== null && ` (before it: ${automation.previous_deployed_version})`}
          </dd>
          <dt>Latest version</dt>
          <dd>{automation.latest_version || 'None yet'}</dd>
          <dt>Trigger</dt>
          <dd>{automation.trigger ? `${words(automation.trigger.type)}${automation.trigger.event ? `: ${automation.trigger.event}` : ''}` : '—'}</dd>
          <dt>Runs on</dt>
          <dd>{runsOn(automation.connection_id, automation.mode)}</dd>
          <dt>Failures in a row</dt>
          <dd>{automation.consecutive_failures}</dd>
          <dt>Updated</dt>
          <dd>{formatTime(automation.updated_at)}</dd>
        </dl>
        {permissions.can('automations:write') && <AutomationActions automation={automation} onDeployed={setDeployed} />}
        {deployed && (
          <div role="status">
            <Notice>{deployedSentence(deployed)}</Notice>
          </div>
        )}
      </Section>
      <VersionsSection automation={automation} />
      <RunsSection automation={automation} />
      {permissions.can('runs:write') && <DryRun automation={automation} />}
    </AdminPage>
  );
}

export const Route = createLazyRoute('/app/automations/$automationId')({ component: AutomationPage });
