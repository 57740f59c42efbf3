import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { ApiError } from '../../api/client.ts';
import { queryKeys } from '../../api/keys.ts';
import type { Member, Role } from '../../api/types.ts';
import { useApi, useSession, useSignedIn } from '../../auth/SessionContext.tsx';
import { Badge, ConfirmButton, dialogActionsClass, Modal, PagedList, tableClass, useCursorList } from '../../ui/admin.tsx';
import { Button, ErrorMessage, TextField } from '../../ui/controls.tsx';
import styles from './members.module.css';
import { grantableBy, manages } from './roles.ts';

/** Under `queryKeys.members`, so a change here also refreshes the inbox's whole list (assignees, lock holders). */
const membersListKey = [...queryKeys.members, 'pages'] as const;

const ROLE_TONE: Record<Role, 'good' | 'warn' | undefined> = { owner: 'good', admin: 'warn', agent: undefined, viewer: undefined };
const label = (member: Pick<Member, 'name' | 'email'>) => member.name ?? member.email;

export function MembersList() {
  const me = useSignedIn().member;
  const list = useCursorList<Member>(membersListKey, '/v1/members');
  const manager = me.role === 'owner' || me.role === 'admin';
  return (
    <PagedList list={list} empty="Nobody is listed yet. Invite teammates below.">
      {(members) => (
        <table className={tableClass} aria-label="Members">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Joined</th>
              {manager && <th scope="col">Manage</th>}
            </tr>
          </thead>
          <tbody>
            {members.map((member) => (
              <tr key={member.id} data-member-id={member.id}>
                <th scope="row" className={styles.rowHeader}>
                  {member.name ?? <span className={styles.muted}>No name given</span>}
                  {member.id === me.id && <span className={styles.muted}> (you)</span>}
                </th>
                <td>{member.email}</td>
                <td>
                  <Badge tone={ROLE_TONE[member.role]}>{member.role}</Badge>
                </td>
                <td>{new Date(member.created_at).toLocaleDateString()}</td>
                {manager && (
                  <td>
                    <MemberActions member={member} />
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </PagedList>
  );
}

/** Only for members below you (the API's rule); the owner alone hands the organization over. */
function MemberActions({ member }: { member: Member }) {
  const me = useSignedIn().member;
  const api = useApi();
  const queryClient = useQueryClient();
  if (member.id === me.id) return <span className={styles.muted}>{me.role === 'owner' ? 'Hand the organization over to change your role' : ''}</span>;
  const canManage = manages(me.role, member.role);
  if (!canManage) {
    return <span className={styles.muted}>{member.role === 'owner' ? 'The owner changes only by a transfer' : `Only the owner manages ${member.role}s`}</span>;
  }
  const remove = async () => {
    await api.delete(`/v1/members/${encodeURIComponent(member.id)}`);
    await queryClient.invalidateQueries({ queryKey: queryKeys.members });
  };
  return (
    <div className={styles.row}>
      <RoleChange member={member} />
      <ConfirmButton
        label="Remove"
        title={`Remove ${label(member)}?`}
        consequence={`${label(member)} loses access to the organization at once: their sessions end, their reply locks are released and their conversations become unassigned. API keys, webhooks and numbers they set up stay with the organization. Their account remains, and they can be invited again.`}
        confirmLabel="Remove member"
        onConfirm={remove}
      />
      {me.role === 'owner' && <TransferOwnership member={member} />}
    </div>
  );
}

function RoleChange({ member }: { member: Member }) {
  const me = useSignedIn().member;
  const api = useApi();
  const queryClient = useQueryClient();
  const [role, setRole] = useState<Role>(member.role);
  const change = useMutation({
    mutationFn: () => api.patch<Member>(`/v1/members/${encodeURIComponent(member.id)}`, { role }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.members }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    change.mutate();
  };
  return (
    <form className={styles.row} onSubmit={submit}>
      <select className={styles.select} aria-label={`Role of ${label(member)}`} value={role} onChange={(event) => setRole(event.target.value as Role)}>
        {grantableBy(me.role).map((candidate) => (
          <option key={candidate} value={candidate}>
            {candidate}
          </option>
        ))}
      </select>
      <Button type="submit" disabled={role === member.role || change.isPending}>
        {change.isPending ? 'Saving…' : 'Change role'}
      </Button>
      <ErrorMessage error={change.error} />
    </form>
  );
}

/**
 * The owner hands the organization to another member and becomes an admin. A sign-in older than
 * ten minutes must confirm with the password: the API says so, and the dialog then asks for it.
 */
function TransferOwnership({ member }: { member: Member }) {
  const api = useApi();
  const session = useSession();
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState('');
  const [askPassword, setAskPassword] = useState(false);
  const transfer = useMutation({
    mutationFn: () => api.post<Member>('/v1/organization/transfer-ownership', { member_id: member.id, ...(askPassword ? { password } : {}) }),
    onSuccess: async () => {
      setOpen(false);
      // The session's token still says owner: a renewal reads the member's new role.
      const stale = session.currentToken();
      if (stale) await session.renew(stale);
      await queryClient.invalidateQueries({ queryKey: queryKeys.members });
    },
    onError: (error) => {
      if (error instanceof ApiError && error.code === 'validation_failed' && error.body.param === '/password') setAskPassword(true);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    transfer.mutate();
  };
  return (
    <>
      <Button variant="danger" onClick={() => setOpen(true)}>
        Make owner
      </Button>
      <Modal title={`Make ${label(member)} the owner?`} open={open} onOpenChange={(next) => !transfer.isPending && setOpen(next)}>
        <form className={styles.form} onSubmit={submit}>
          <p>
            {label(member)} becomes the organization&apos;s owner, with control of billing and of every member, you included. You become an admin. Only the new
            owner can hand it back.
          </p>
          {askPassword && (
            <TextField
              label="Your password"
              type="password"
              autoComplete="current-password"
              required
              hint="You signed in more than 10 minutes ago: confirm with your password."
              value={password}
              onChange={(event) => setPassword(event.target.value)}
            />
          )}
          <ErrorMessage error={askPassword && !password ? null : transfer.error} />
          <div className={dialogActionsClass}>
            <Button onClick={() => setOpen(false)} disabled={transfer.isPending}>
              Cancel
            </Button>
            <Button type="submit" variant="primary" disabled={transfer.isPending}>
              {transfer.isPending ? 'Transferring…' : 'Transfer ownership'}
            </Button>
          </div>
        </form>
      </Modal>
    </>
  );
}
