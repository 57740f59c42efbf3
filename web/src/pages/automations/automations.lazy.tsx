import { createLazyRoute, Link } from '@tanstack/react-router';
import { useState } from 'react';
import { usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage, Badge, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { Button, FilterSelect } from '../../ui/controls.tsx';
import { automationKeys, formatTime, toneOf, type Automation } from './api.ts';
import { useRunsOn } from './connections.ts';
import { CreateAutomation } from './CreateAutomation.tsx';
import styles from './automations.module.css';

const STATUSES = ['draft', 'enabled', 'disabled'] as const satisfies readonly Automation['status'][];

function AutomationsPage() {
  const permissions = usePermissions();
  const writable = permissions.can('automations:write');
  const runsOn = useRunsOn();
  const [creating, setCreating] = useState(false);
  const [status, setStatus] = useState('');
  const list = useCursorList<Automation>(automationKeys.list({ status }), '/v1/automations', { status: status || undefined });
  return (
    <AdminPage
      title="Automations"
      description="What happens on its own when a message arrives, a conversation opens, an event fires or your code asks: a trigger and its steps, kept as numbered versions, one of them deployed."
      actions={
        writable &&
        !creating && (
          <Button variant="primary" onClick={() => setCreating(true)}>
            New automation
          </Button>
        )
      }
    >
      {creating && <CreateAutomation onClose={() => setCreating(false)} />}
      <Section title="All automations" actions={<FilterSelect label="Status" value={status} options={STATUSES} onChange={setStatus} />}>
        <PagedList
          list={list}
          empty={
            status
              ? `No ${status} automations.`
              : writable
                ? 'No automations yet. Choose “New automation” to write the first: a trigger and the steps it runs.'
                : 'No automations yet. An owner or admin can create one.'
          }
        >
          {(automations) => (
            <table className={tableClass}>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Deployed</th>
                  <th scope="col">Trigger</th>
                  <th scope="col">Runs on</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {automations.map((automation) => (
                  <tr key={automation.id}>
                    <td>
                      <Link to="/automations/$automationId" params={{ automationId: automation.id }}>
                        {automation.name}
                      </Link>
                    </td>
                    <td>
                      <Badge tone={toneOf(automation.status)}>{automation.status}</Badge>
                    </td>
                    <td>
                      {automation.deployed_version === null ? 'None' : `Version ${automation.deployed_version}`}
                      {automation.latest_version > (automation.deployed_version ?? 0) && (
                        <span className={styles.muted}> (latest {automation.latest_version})</span>
                      )}
                    </td>
                    <td>{automation.trigger ? (automation.trigger.event ?? automation.trigger.type) : '—'}</td>
                    <td>{runsOn(automation.connection_id, automation.mode)}</td>
                    <td>{formatTime(automation.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </PagedList>
      </Section>
    </AdminPage>
  );
}

export const Route = createLazyRoute('/app/automations')({ component: AutomationsPage });
