import { useMutation, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import { useState } from 'react';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { AdminPage, Badge, ConfirmButton, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { Button, ErrorMessage, FilterSelect, Loading, SelectField } from '../../ui/controls.tsx';
import { TEMPLATE_STATUSES } from '../../../../src/provider/provider.schemas.ts';
import { useConnections } from '../connections/connections-data.ts';
import { dateTime } from '../inbox/compose/format.ts';
import { templateKeys } from './keys.ts';
import { TemplateForm } from './TemplateForm.tsx';
import styles from './templates.module.css';
import type { Template, TemplateStatus, TemplateSync } from './types.ts';

const TONES: Partial<Record<TemplateStatus, 'good' | 'bad' | 'warn'>> = {
  approved: 'good',
  pending: 'warn',
  in_appeal: 'warn',
  pending_deletion: 'warn',
  paused: 'warn',
  flagged: 'warn',
  rejected: 'bad',
  disabled: 'bad',
  locked: 'bad',
  limit_exceeded: 'bad',
};

function TemplateStatusBadge({ template }: { template: Pick<Template, 'status' | 'status_reason'> }) {
  return (
    <>
      <Badge tone={TONES[template.status]}>{template.status.replace(/_/g, ' ')}</Badge>
      {template.status_reason && <span className={styles.reason}>{template.status_reason}</span>}
    </>
  );
}

function TemplatesPage() {
  const connections = useConnections();
  const { can } = usePermissions();
  const [picked, setPicked] = useState('');
  const [status, setStatus] = useState('');
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<Template | null>(null);
  const all = connections.data ?? [];
  const connectionId = picked || all.find((connection) => connection.status === 'connected')?.id || all[0]?.id || '';
  const write = can('templates:write');

  return (
    <AdminPage
      title="Templates"
      description="Messages the provider reviewed in advance: the only ones that reach a customer outside the 24-hour window, and what notifications and schedules send. Each number keeps its own."
      actions={
        write && connectionId && !creating ? (
          <Button variant="primary" onClick={() => setCreating(true)}>
            New template
          </Button>
        ) : null
      }
    >
      {connections.isPending ? (
        <Loading />
      ) : connections.error ? (
        <ErrorMessage error={connections.error} />
      ) : all.length === 0 ? (
        <Section title="No number yet">
          <p className={styles.muted}>
            Templates belong to a number&apos;s business account. <Link to="/connections">Connect a number</Link> first.
          </p>
        </Section>
      ) : (
        <>
          <div className={styles.filters}>
            <SelectField label="Number" value={connectionId} onChange={(event) => setPicked(event.target.value)}>
              {all.map((connection) => (
                <option key={connection.id} value={connection.id}>
                  {connection.name ?? connection.display_phone_number ?? connection.phone_number_id}
                  {connection.status === 'connected' ? '' : ` (${connection.status.replace('_', ' ')})`}
                </option>
              ))}
            </SelectField>
            <FilterSelect
              inline={false}
              label="Status"
              value={status}
              options={TEMPLATE_STATUSES}
              optionLabel={(value) => value.replace(/_/g, ' ')}
              onChange={setStatus}
            />
          </div>
          {creating && (
            <Section title="New template">
              <TemplateForm
                connectionId={connectionId}
                onCancel={() => setCreating(false)}
                onCreated={(template) => {
                  setCreating(false);
                  setCreated(template);
                }}
              />
            </Section>
          )}
          {created && (
            <p role="status" className={styles.success}>
              {created.name} ({created.language}) was submitted for review: the provider approves or rejects it, and its status below changes when the answer
              comes back.
            </p>
          )}
          {write && <SyncSection connectionId={connectionId} />}
          <TemplateList connectionId={connectionId} status={status} write={write} />
        </>
      )}
    </AdminPage>
  );
}

function SyncSection({ connectionId }: { connectionId: string }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const sync = useMutation({
    mutationFn: () => api.post<TemplateSync>('/v1/templates/sync', { connection_id: connectionId }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: templateKeys.connection(connectionId) }),
  });
  const summary = sync.data?.connection_id === connectionId ? sync.data : null;
  return (
    <Section
      title="Sync with the provider"
      actions={
        <Button onClick={() => sync.mutate()} disabled={sync.isPending}>
          {sync.isPending ? 'Syncing…' : 'Sync templates'}
        </Button>
      }
    >
      <p className={styles.muted}>
        Reads every template of this number&apos;s business account from the provider again: templates made elsewhere (in the provider&apos;s own manager) are
        added, review statuses are brought up to date, and templates the provider no longer has are marked deleted. Reviews arrive by themselves too; sync when
        something looks out of date.
      </p>
      <ErrorMessage error={sync.error} />
      {summary && (
        <p role="status" className={styles.success}>
          Synced at {dateTime(summary.synced_at)}: {summary.total} at the provider, {summary.added} added, {summary.status_changed} changed status,{' '}
          {summary.deleted} marked deleted.
        </p>
      )}
    </Section>
  );
}

function TemplateList({ connectionId, status, write }: { connectionId: string; status: string; write: boolean }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const list = useCursorList<Template>(templateKeys.list(connectionId, status), '/v1/templates', { connection_id: connectionId, status: status || undefined });
  const remove = async (template: Template) => {
    await api.delete(`/v1/templates/${template.id}`);
    await queryClient.invalidateQueries({ queryKey: templateKeys.connection(connectionId) });
  };
  const empty = status
    ? `No ${status.replace(/_/g, ' ')} template on this number. Choose another status, or any.`
    : write
      ? 'No template on this number yet. Create one with “New template” (the provider reviews it), or sync to fetch those made in the provider’s manager.'
      : 'No template on this number yet. An owner or admin creates them.';
  return (
    <Section title="Templates of this number">
      <PagedList list={list} empty={empty}>
        {(templates) => (
          <table className={tableClass}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Language</th>
                <th scope="col">Category</th>
                <th scope="col">Status</th>
                <th scope="col">Updated</th>
                {write && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {templates.map((template) => (
                <tr key={template.id}>
                  <td>{template.name}</td>
                  <td>{template.language}</td>
                  <td>{template.category ?? '—'}</td>
                  <td>
                    <TemplateStatusBadge template={template} />
                  </td>
                  <td>{dateTime(template.updated_at)}</td>
                  {write && (
                    <td>
                      {template.status !== 'deleted' && (
                        <ConfirmButton
                          label="Delete"
                          title={`Delete ${template.name} (${template.language})?`}
                          consequence={`The provider deletes this language of ${template.name}: it can no longer be sent, so notifications and schedules that use it fail from their next send. Messages already sent keep naming it; the record stays here, marked deleted, and the name is free for a new template.`}
                          confirmLabel="Delete template"
                          onConfirm={() => remove(template)}
                        />
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </PagedList>
    </Section>
  );
}

export const Route = createLazyRoute('/app/templates')({ component: TemplatesPage });
