import { useMutation, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute, Link } from '@tanstack/react-router';
import { useId, useState } from 'react';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { useLiveEvents } from '../../live/events.tsx';
import { AdminPage, Badge, PagedList, Section, useCursorList } from '../../ui/admin.tsx';
import { Button, ErrorMessage, SelectField } from '../../ui/controls.tsx';
import { useMemberName } from '../inbox/compose/members.ts';
import { describeAction } from './actions.ts';
import { approvalKeys, formatTime, runKeys, toneOf, type Approval } from './api.ts';
import { prettyJson } from './JsonField.tsx';
import styles from './automations.module.css';

const DECIDED = ['approved', 'rejected', 'expired', 'canceled'] as const satisfies readonly Approval['status'][];

function ApprovalsPage() {
  const queryClient = useQueryClient();
  const [decided, setDecided] = useState('');
  const pending = useCursorList<Approval>(approvalKeys.list({ status: 'pending' }), '/v1/approvals', { status: 'pending' });
  const history = useCursorList<Approval>(approvalKeys.list({ status: decided }), '/v1/approvals', { status: decided || undefined });
  useLiveEvents(['approval.requested', 'approval.decided'], () => void queryClient.invalidateQueries({ queryKey: approvalKeys.all }));
  return (
    <AdminPage
      title="Approvals"
      description="Runs that stopped at a request_approval step: each waits for an owner or admin to approve or reject the action shown, exactly as it will be carried out."
    >
      <Section title="Waiting for a decision">
        <PagedList list={pending} empty="Nothing waits for a decision. A run asks here when it reaches a request_approval step; the page updates by itself.">
          {(approvals) => (
            <div className={styles.cards}>
              {approvals.map((approval) => (
                <PendingApproval key={approval.id} approval={approval} />
              ))}
            </div>
          )}
        </PagedList>
      </Section>
      <Section
        title="Decided"
        actions={
          <SelectField inline label="Show" value={decided} onChange={(e) => setDecided(e.target.value)}>
            <option value="">All decided</option>
            {DECIDED.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
          </SelectField>
        }
      >
        <PagedList list={history} empty={decided ? `No ${decided} approvals.` : 'No approval has been decided yet.'}>
          {(approvals) => {
            // Without a status the API lists every approval: the pending ones are above.
            const shown = approvals.filter((approval) => approval.status !== 'pending');
            return shown.length === 0 ? (
              <p className={styles.muted}>None on this page; load more to see older ones.</p>
            ) : (
              <div className={styles.cards}>
                {shown.map((approval) => (
                  <DecidedApproval key={approval.id} approval={approval} />
                ))}
              </div>
            );
          }}
        </PagedList>
      </Section>
    </AdminPage>
  );
}

/** The frozen action: in words, and as the API holds it. */
function FrozenAction({ approval }: { approval: Approval }) {
  const memberName = useMemberName();
  return (
    <div className={styles.action}>
      <p>
        <strong>What approving does:</strong> {describeAction(approval.action, memberName)}
      </p>
      <pre aria-label="The action as the API holds it">{prettyJson(approval.action)}</pre>
    </div>
  );
}

function Links({ approval }: { approval: Approval }) {
  return (
    <p className={styles.muted}>
      <Link to="/automations/$automationId" params={{ automationId: approval.automation_id }}>
        Automation
      </Link>{' '}
      ·{' '}
      <Link to="/runs/$runId" params={{ runId: approval.run_id }}>
        Run {approval.run_id}
      </Link>{' '}
      · step {approval.step_id} · requested {formatTime(approval.requested_at)}
    </p>
  );
}

function approversOf(approval: Approval): string {
  const { roles, member_ids, allow_api_keys } = approval.approvers;
  const parts = [
    roles.length ? roles.map((role) => `${role}s`).join(', ') : '',
    member_ids.length ? `${member_ids.length} named member(s)` : '',
    allow_api_keys ? 'API keys' : '',
  ];
  return parts.filter(Boolean).join('; ') || 'owners and admins';
}

function PendingApproval({ approval }: { approval: Approval }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const canDecide = usePermissions().administer;
  const commentId = useId();
  const [comment, setComment] = useState('');
  const decide = useMutation({
    mutationFn: (decision: 'approve' | 'reject') => api.post<Approval>(`/v1/approvals/${approval.id}/${decision}`, comment ? { comment } : {}),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: approvalKeys.all });
      await queryClient.invalidateQueries({ queryKey: runKeys.all });
    },
  });
  return (
    <article className={styles.card} aria-labelledby={`${commentId}-title`}>
      <h3 id={`${commentId}-title`}>{approval.title}</h3>
      {approval.summary && <p>{approval.summary}</p>}
      <FrozenAction approval={approval} />
      <Links approval={approval} />
      <p className={styles.muted}>
        Who may decide: {approversOf(approval)}. Expires {formatTime(approval.expires_at)}: then the run takes its expired branch.
      </p>
      {canDecide && (
        <div className={styles.form}>
          <label htmlFor={commentId}>Comment or reason (optional, kept with the decision)</label>
          <textarea id={commentId} rows={2} maxLength={1000} value={comment} onChange={(e) => setComment(e.target.value)} />
          <ErrorMessage error={decide.error} />
          <div className={styles.buttons}>
            <Button variant="primary" onClick={() => decide.mutate('approve')} disabled={decide.isPending}>
              Approve
            </Button>
            <Button variant="danger" onClick={() => decide.mutate('reject')} disabled={decide.isPending}>
              Reject
            </Button>
          </div>
          <p className={styles.muted}>Approve: the run carries out the action above, then goes on. Reject: the run takes its rejected branch.</p>
        </div>
      )}
    </article>
  );
}

function DecidedApproval({ approval }: { approval: Approval }) {
  const memberName = useMemberName();
  const by = approval.decided_by ? (approval.decided_by.member_id ? memberName(approval.decided_by.member_id) : approval.decided_by.key_id) : null;
  return (
    <article className={styles.card} aria-label={approval.title}>
      <h3>
        {approval.title} <Badge tone={toneOf(approval.status)}>{approval.status}</Badge>
      </h3>
      <p>
        {by ? `${by}, ` : ''}
        {formatTime(approval.decided_at)}
        {approval.comment ? ` — “${approval.comment}”` : ''}
      </p>
      <p>{describeAction(approval.action, memberName)}</p>
      <Links approval={approval} />
    </article>
  );
}

export const Route = createLazyRoute('/app/approvals')({ component: ApprovalsPage });
