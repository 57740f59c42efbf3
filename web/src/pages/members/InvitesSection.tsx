import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import type { Invite, InviteStatus } from '../../../../src/modules/invites/invites.schemas.ts';
import type { Role } from '../../api/types.ts';
import { useApi, useSignedIn } from '../../auth/SessionContext.tsx';
import { Badge, ConfirmButton, PagedList, Section, tableClass, useCursorList } from '../../ui/admin.tsx';
import { Button, ErrorMessage, errorFor, TextField } from '../../ui/controls.tsx';
import styles from './members.module.css';
import { grantableBy, manages, ROLE_DESCRIPTIONS } from './roles.ts';

const invitesKey = ['invites'] as const;

const STATUS_TONE: Record<InviteStatus, 'good' | 'warn' | 'bad' | undefined> = { pending: undefined, accepted: 'good', expired: 'warn', revoked: 'bad' };
const STATUS_FILTERS: { value: InviteStatus | ''; label: string }[] = [
  { value: '', label: 'All' },
  { value: 'pending', label: 'Pending' },
  { value: 'expired', label: 'Expired' },
  { value: 'accepted', label: 'Accepted' },
  { value: 'revoked', label: 'Revoked' },
];

const day = (timestamp: string | null) => (timestamp ? new Date(timestamp).toLocaleDateString() : '');

/** Inviting people by email, and the invitations sent: owners and admins only, for roles below their own. */
export function InvitesSection() {
  const [status, setStatus] = useState<InviteStatus | ''>('');
  const list = useCursorList<Invite>([...invitesKey, status], '/v1/invites', { status: status || undefined });
  const filterId = useId();
  return (
    <>
      <Section title="Invite a teammate">
        <InviteForm />
      </Section>
      <Section
        title="Invitations"
        actions={
          <div className={styles.row}>
            <label htmlFor={filterId}>Show</label>
            <select id={filterId} className={styles.select} value={status} onChange={(event) => setStatus(event.target.value as InviteStatus | '')}>
              {STATUS_FILTERS.map((filter) => (
                <option key={filter.value} value={filter.value}>
                  {filter.label}
                </option>
              ))}
            </select>
          </div>
        }
      >
        <PagedList
          list={list}
          empty={status ? `No ${status} invitations.` : 'No invitations yet. Invite a teammate above: they get a mail with a link valid for 7 days.'}
        >
          {(invites) => (
            <table className={tableClass} aria-label="Invitations">
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Role</th>
                  <th scope="col">Status</th>
                  <th scope="col">When</th>
                  <th scope="col">Manage</th>
                </tr>
              </thead>
              <tbody>
                {invites.map((invite) => (
                  <InviteRow key={invite.id} invite={invite} />
                ))}
              </tbody>
            </table>
          )}
        </PagedList>
      </Section>
    </>
  );
}

function InviteForm() {
  const me = useSignedIn().member;
  const api = useApi();
  const queryClient = useQueryClient();
  const roles = grantableBy(me.role);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>(roles.includes('agent') ? 'agent' : (roles[0] ?? 'viewer'));
  const roleId = useId();
  const invite = useMutation({
    mutationFn: () => api.post<Invite>('/v1/invites', { email, role }),
    onSuccess: async () => {
      setEmail('');
      await queryClient.invalidateQueries({ queryKey: invitesKey });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    invite.mutate();
  };
  const emailError = errorFor(invite.error, 'email');
  return (
    <>
      <form className={styles.inviteForm} onSubmit={submit}>
        <TextField label="Email" type="email" autoComplete="off" required value={email} onChange={(event) => setEmail(event.target.value)} error={emailError} />
        <div className={styles.field}>
          <label htmlFor={roleId}>Role</label>
          <select id={roleId} value={role} onChange={(event) => setRole(event.target.value as Role)}>
            {roles.map((candidate) => (
              <option key={candidate} value={candidate}>
                {candidate}
              </option>
            ))}
          </select>
        </div>
        <Button type="submit" variant="primary" disabled={invite.isPending}>
          {invite.isPending ? 'Sending…' : 'Send invite'}
        </Button>
      </form>
      <p className={styles.muted}>{ROLE_DESCRIPTIONS[role]}</p>
      {!emailError && <ErrorMessage error={invite.error} />}
      {invite.isSuccess && (
        <p role="status" className={styles.success}>
          Invitation sent to {invite.data.email}. The link in the mail works once, for 7 days.
        </p>
      )}
    </>
  );
}

function InviteRow({ invite }: { invite: Invite }) {
  const me = useSignedIn().member;
  const api = useApi();
  const queryClient = useQueryClient();
  const path = `/v1/invites/${encodeURIComponent(invite.id)}`;
  const refresh = () => queryClient.invalidateQueries({ queryKey: invitesKey });
  const resend = useMutation({ mutationFn: () => api.post<Invite>(`${path}/resend`), onSuccess: refresh });
  const open = invite.status === 'pending' || invite.status === 'expired';
  const when =
    invite.status === 'accepted'
      ? `Accepted ${day(invite.accepted_at)}`
      : invite.status === 'revoked'
        ? `Revoked ${day(invite.revoked_at)}`
        : `${invite.status === 'expired' ? 'Expired' : 'Expires'} ${day(invite.expires_at)} (sent ${day(invite.last_sent_at)})`;
  return (
    <tr data-invite-id={invite.id}>
      <th scope="row" className={styles.rowHeader}>
        {invite.email}
      </th>
      <td>
        <Badge>{invite.role}</Badge>
      </td>
      <td>
        <Badge tone={STATUS_TONE[invite.status]}>{invite.status}</Badge>
      </td>
      <td>{when}</td>
      <td>
        {open && manages(me.role, invite.role) ? (
          <div className={styles.row}>
            <Button onClick={() => resend.mutate()} disabled={resend.isPending}>
              {resend.isPending ? 'Sending…' : 'Resend'}
            </Button>
            <ConfirmButton
              label="Revoke"
              title={`Revoke the invitation to ${invite.email}?`}
              consequence={`The link mailed to ${invite.email} stops working at once, and nobody can join with it. You can invite ${invite.email} again later.`}
              confirmLabel="Revoke invitation"
              onConfirm={async () => {
                await api.delete(path);
                await refresh();
              }}
            />
            {resend.isSuccess && (
              <span role="status" className={styles.success}>
                Sent again: the earlier link no longer works.
              </span>
            )}
            <ErrorMessage error={resend.error} />
          </div>
        ) : (
          <span className={styles.muted}>{open ? 'Only the owner manages admin invitations' : '—'}</span>
        )}
      </td>
    </tr>
  );
}
