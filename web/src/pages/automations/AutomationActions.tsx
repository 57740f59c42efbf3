import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import type { ApiClient } from '../../api/client.ts';
import type { ListPage } from '../../api/types.ts';
import { useApi } from '../../auth/SessionContext.tsx';
import { dialogActionsClass, Modal } from '../../ui/admin.tsx';
import { Button, ErrorMessage, Loading } from '../../ui/controls.tsx';
import { ACTIVE_RUN_STATUSES, automationKeys, runKeys, type Automation, type Deployment, type Run } from './api.ts';
import { InFlightChoice, type InFlight } from './InFlightChoice.tsx';
import { Problems } from './JsonField.tsx';
import { VersionSelect } from './VersionSelect.tsx';
import styles from './automations.module.css';

/** What the page says after a deploy or a rollback: the version, and what became of the runs in flight. */
export function deployedSentence(deployment: Deployment): string {
  const { kept, canceled, migrated } = deployment.in_flight;
  return `Version ${deployment.version} is deployed. Runs in flight: ${kept} kept, ${canceled} canceled, ${migrated} migrated.`;
}

/** Whether the automation has a run that is queued, running, waiting or paused (the list filters one status at a time). */
async function hasActiveRuns(api: ApiClient, automationId: string): Promise<boolean> {
  const pages = await Promise.all(
    ACTIVE_RUN_STATUSES.map((status) => api.get<ListPage<Run>>('/v1/runs', { query: { automation_id: automationId, status, limit: 1 } })),
  );
  return pages.some((page) => page.data.length > 0);
}

/**
 * The automation's lifecycle: deploy a version, roll back, enable, disable, delete. Each answer
 * replaces the automation in the cache; a deploy's counts are handed to `onDeployed`.
 */
export function AutomationActions({ automation, onDeployed }: { automation: Automation; onDeployed: (deployment: Deployment) => void }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const [dialog, setDialog] = useState<'deploy' | 'rollback' | 'disable' | 'delete' | null>(null);
  const changed = async (next: Automation) => {
    queryClient.setQueryData(automationKeys.one(next.id), next);
    await queryClient.invalidateQueries({ queryKey: automationKeys.all });
    await queryClient.invalidateQueries({ queryKey: runKeys.all });
  };
  const enable = useMutation({
    mutationFn: () => api.post<Automation>(`/v1/automations/${automation.id}/enable`),
    onSuccess: changed,
  });
  const close = () => setDialog(null);
  return (
    <div className={styles.actionBar}>
      <div className={styles.buttons}>
        <Button variant="primary" onClick={() => setDialog('deploy')} disabled={automation.latest_version === 0}>
          Deploy a version
        </Button>
        {automation.previous_deployed_version !== null && (
          <Button onClick={() => setDialog('rollback')}>Roll back to version {automation.previous_deployed_version}</Button>
        )}
        {automation.status === 'enabled' ? (
          <Button onClick={() => setDialog('disable')}>Disable</Button>
        ) : (
          <Button onClick={() => enable.mutate()} disabled={automation.deployed_version === null || enable.isPending}>
            Enable
          </Button>
        )}
        <Button variant="danger" onClick={() => setDialog('delete')}>
          Delete automation
        </Button>
      </div>
      {automation.deployed_version === null && automation.status !== 'enabled' && (
        <p className={styles.muted}>Deploy a version first: enabling starts runs on the deployed version.</p>
      )}
      <ErrorMessage error={enable.error} />
      {(dialog === 'deploy' || dialog === 'rollback') && (
        <DeployDialog
          automation={automation}
          rollback={dialog === 'rollback'}
          onClose={close}
          onDone={async (deployment) => {
            close();
            await changed(deployment.automation);
            onDeployed(deployment);
          }}
        />
      )}
      {dialog === 'disable' && (
        <DisableDialog
          automation={automation}
          onClose={close}
          onDone={async (next) => {
            close();
            await changed(next);
          }}
        />
      )}
      {dialog === 'delete' && <DeleteDialog automation={automation} onClose={close} />}
    </div>
  );
}

function DeployDialog({
  automation,
  rollback,
  onClose,
  onDone,
}: {
  automation: Automation;
  rollback: boolean;
  onClose: () => void;
  onDone: (deployment: Deployment) => Promise<void>;
}) {
  const api = useApi();
  const [version, setVersion] = useState(automation.latest_version);
  const [inFlight, setInFlight] = useState<InFlight>('keep');
  const deploy = useMutation({
    mutationFn: () =>
      rollback
        ? api.post<Deployment>(`/v1/automations/${automation.id}/rollback`, { in_flight: inFlight })
        : api.post<Deployment>(`/v1/automations/${automation.id}/deploy`, { version, in_flight: inFlight }),
    onSuccess: onDone,
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    deploy.mutate();
  };
  const title = rollback ? `Roll back to version ${automation.previous_deployed_version}` : 'Deploy a version';
  return (
    <Modal title={title} open onOpenChange={(open) => !open && !deploy.isPending && onClose()}>
      <form className={styles.form} onSubmit={submit}>
        {rollback ? (
          <p>
            Version {automation.previous_deployed_version} becomes the one new runs start on again, in place of version {automation.deployed_version}.
          </p>
        ) : (
          <>
            <VersionSelect label="Version" latest={automation.latest_version} value={version} onChange={setVersion} />
            <p className={styles.muted}>New runs start on it. It does not enable the automation{automation.status === 'enabled' ? '' : ': enable it after'}.</p>
          </>
        )}
        <InFlightChoice value={inFlight} onChange={setInFlight} options={['keep', 'cancel', 'migrate']} />
        <ErrorMessage error={deploy.error} />
        <Problems error={deploy.error} title="Where in the version" />
        <div className={dialogActionsClass}>
          <Button onClick={onClose} disabled={deploy.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="primary" disabled={deploy.isPending}>
            {deploy.isPending ? 'Deploying…' : rollback ? 'Roll back' : `Deploy version ${version}`}
          </Button>
        </div>
      </form>
    </Modal>
  );
}

function DisableDialog({ automation, onClose, onDone }: { automation: Automation; onClose: () => void; onDone: (automation: Automation) => Promise<void> }) {
  const api = useApi();
  const [inFlight, setInFlight] = useState<InFlight>('keep');
  const disable = useMutation({
    mutationFn: () => api.post<Automation>(`/v1/automations/${automation.id}/disable`, { in_flight: inFlight }),
    onSuccess: onDone,
  });
  return (
    <Modal title={`Disable ${automation.name}`} open onOpenChange={(open) => !open && !disable.isPending && onClose()}>
      <p>No new runs start until it is enabled again.</p>
      <InFlightChoice value={inFlight} onChange={setInFlight} options={['keep', 'cancel']} />
      <ErrorMessage error={disable.error} />
      <div className={dialogActionsClass}>
        <Button onClick={onClose} disabled={disable.isPending}>
          Cancel
        </Button>
        <Button variant="primary" onClick={() => disable.mutate()} disabled={disable.isPending}>
          {disable.isPending ? 'Disabling…' : 'Disable'}
        </Button>
      </div>
    </Modal>
  );
}

/**
 * Deleting asks first whether runs are active: the API refuses the delete while they are, unless it
 * may cancel them (`cancel_runs=true`), which the member must choose knowingly.
 */
function DeleteDialog({ automation, onClose }: { automation: Automation; onClose: () => void }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const active = useQuery({ queryKey: [...runKeys.all, 'active', automation.id], queryFn: () => hasActiveRuns(api, automation.id), staleTime: 0 });
  const [cancelRuns, setCancelRuns] = useState(false);
  const remove = useMutation({
    mutationFn: () => api.delete(`/v1/automations/${automation.id}`, { query: { cancel_runs: cancelRuns || undefined } }),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: automationKeys.one(automation.id) });
      await queryClient.invalidateQueries({ queryKey: automationKeys.all });
      await navigate({ to: '/automations' });
    },
    // Runs started since the check: the refusal names them, and the check is made again.
    onError: () => void active.refetch(),
  });
  const mustCancel = active.data === true;
  return (
    <Modal title={`Delete ${automation.name}?`} open onOpenChange={(open) => !open && !remove.isPending && onClose()}>
      <p>
        The automation and its versions disappear from every list and read, and nothing starts it again. Its runs keep their history. This cannot be undone.
      </p>
      {active.isPending ? (
        <Loading label="Checking for active runs…" />
      ) : active.error ? (
        <ErrorMessage error={active.error} />
      ) : mustCancel ? (
        <div className={styles.warning} role="note">
          <p>It has active runs (queued, running, waiting or paused): the API deletes it only if they are canceled with it.</p>
          <label className={styles.choice}>
            <input type="checkbox" checked={cancelRuns} onChange={(e) => setCancelRuns(e.target.checked)} />
            <span>Cancel its active runs too (they end canceled, outcome canceled_by_delete; their conversations go back to the API)</span>
          </label>
        </div>
      ) : (
        <p className={styles.muted}>It has no active runs.</p>
      )}
      <ErrorMessage error={remove.error} />
      <div className={dialogActionsClass}>
        <Button onClick={onClose} disabled={remove.isPending}>
          Cancel
        </Button>
        <Button variant="primary" onClick={() => remove.mutate()} disabled={remove.isPending || active.isPending || (mustCancel && !cancelRuns)}>
          {remove.isPending ? 'Deleting…' : mustCancel ? 'Delete and cancel runs' : 'Delete'}
        </Button>
      </div>
    </Modal>
  );
}
