import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { useApi } from '../../auth/SessionContext.tsx';
import { Badge, Section } from '../../ui/admin.tsx';
import { Button, ErrorMessage, errorFor, TextField } from '../../ui/controls.tsx';
import { runKeys, toneOf, words, type Automation, type Run, type RunEvent } from './api.ts';
import { JsonField, parseJson, Problems } from './JsonField.tsx';
import { runResult } from './RunsSection.tsx';
import { Timeline } from './Timeline.tsx';
import { VersionSelect } from './VersionSelect.tsx';
import styles from './automations.module.css';

type DryRunResult = Run & { events: RunEvent[] };

/**
 * A dry run (`POST /v1/runs` with `dry_run: true`): the version walked at once on a virtual clock,
 * sending nothing, calling nothing, asking no one; what the customer, the approvers and the systems
 * called would do comes from `simulate`. The answer is the finished run and its whole log.
 */
export function DryRun({ automation }: { automation: Automation }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const [chosen, setVersion] = useState(automation.deployed_version ?? automation.latest_version);
  // Chosen before the first version existed: the newest then.
  const version = chosen || automation.latest_version;
  const [to, setTo] = useState('');
  const [input, setInput] = useState('{}');
  const [simulate, setSimulate] = useState('{\n  "replies": [],\n  "approvals": [],\n  "http": []\n}');
  const run = useMutation({
    mutationFn: (body: Record<string, unknown>) => api.post<DryRunResult>('/v1/runs', body),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: runKeys.all }),
  });
  if (automation.latest_version === 0) return null;
  const parsedInput = parseJson(input);
  const parsedSimulate = parseJson(simulate);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!parsedInput.ok || !parsedSimulate.ok) return;
    run.mutate({
      automation_id: automation.id,
      version,
      dry_run: true,
      input: parsedInput.value,
      simulate: parsedSimulate.value,
      ...(to ? { to } : {}),
    });
  };
  const result = run.data;
  return (
    <Section title="Dry run">
      <p className={styles.muted}>
        Walks a version now on a virtual clock and shows its log: nothing is sent, tagged, handed off or called, no approval is filed, and waits and delays pass
        at once. Simulated replies, approval decisions and HTTP answers are used in order; without them waits time out and approvals expire. The run is kept,
        marked dry run, and counts toward nothing.
      </p>
      <form className={styles.form} onSubmit={submit}>
        <div className={styles.row}>
          <VersionSelect label="Version to try" latest={automation.latest_version} value={version} onChange={setVersion} />
          <TextField
            label="Customer's number (optional)"
            placeholder="+447700900123"
            value={to}
            onChange={(e) => setTo(e.target.value)}
            error={errorFor(run.error, '/to')}
          />
        </div>
        <JsonField
          label="Input"
          value={input}
          onChange={setInput}
          rows={4}
          hint="What the run reads as input; checked against the definition's input_schema."
        />
        <JsonField
          label="Simulate"
          value={simulate}
          onChange={setSimulate}
          rows={6}
          hint='replies: [{"text": "Yes", "after_seconds": 300}], approvals: [{"decision": "approved"}], http: [{"status": 201, "body": {…}}]'
        />
        <ErrorMessage error={run.error} />
        <Problems error={run.error} />
        <div className={styles.formActions}>
          <Button type="submit" variant="primary" disabled={run.isPending || !parsedInput.ok || !parsedSimulate.ok}>
            {run.isPending ? 'Running…' : `Dry-run version ${version}`}
          </Button>
        </div>
      </form>
      {result && (
        <div className={styles.result} aria-label="Dry run result" role="region">
          <p>
            <Link to="/runs/$runId" params={{ runId: result.id }}>
              {result.id}
            </Link>{' '}
            <Badge tone={toneOf(result.status)}>{words(result.status)}</Badge> {runResult(result)} · {result.steps_executed} steps
          </p>
          <Timeline events={result.events} />
        </div>
      )}
    </Section>
  );
}
