import { FilterSelect } from '../../ui/controls.tsx';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import { Badge, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { formatTime, RUN_STATUS_OPTIONS, runKeys, toneOf, words, type Automation, type Run } from './api.ts';

/** How a run ended, or what it waits for. */
export function runResult(run: Run): string {
  if (run.error) return `${run.error.code}: ${run.error.message}`;
  if (run.outcome) return run.outcome;
  if (run.waiting_for) return `waiting for ${run.waiting_for.type}`;
  return '—';
}

/** The automation's runs, newest first, dry runs included (marked). */
export function RunsSection({ automation }: { automation: Automation }) {
  const [status, setStatus] = useState('');
  const list = useCursorList<Run>(runKeys.list(automation.id, { status }), '/v1/runs', { automation_id: automation.id, status: status || undefined });
  return (
    <Section title="Runs" actions={<FilterSelect label="Status" value={status} options={RUN_STATUS_OPTIONS} optionLabel={words} onChange={setStatus} />}>
      <PagedList
        list={list}
        empty={
          status
            ? `No ${words(status)} runs.`
            : automation.status === 'enabled'
              ? 'No runs yet: one starts when its trigger happens. A dry run (below) shows what one would do.'
              : 'No runs yet. Deploy and enable a version to start runs on its trigger, or try a dry run below.'
        }
      >
        {(runs) => (
          <table className={tableClass}>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Version</th>
                <th scope="col">Trigger</th>
                <th scope="col">Result</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((run) => (
                <tr key={run.id}>
                  <td>
                    <Link to="/runs/$runId" params={{ runId: run.id }}>
                      {run.id}
                    </Link>{' '}
                    {run.dry_run && <Badge>dry run</Badge>}
                  </td>
                  <td>
                    <Badge tone={toneOf(run.status)}>{words(run.status)}</Badge>
                  </td>
                  <td>{run.version}</td>
                  <td>{words(run.trigger.type)}</td>
                  <td>{runResult(run)}</td>
                  <td>{formatTime(run.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </PagedList>
    </Section>
  );
}
