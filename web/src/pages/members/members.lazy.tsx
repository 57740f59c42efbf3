import { createLazyRoute } from '@tanstack/react-router';
import { useSignedIn } from '../../auth/SessionContext.tsx';
import { AdminPage, Section } from '../../ui/admin.tsx';
import { InvitesSection } from './InvitesSection.tsx';
import { MembersList } from './MembersList.tsx';
import { ROLE_DESCRIPTIONS } from './roles.ts';

/**
 * The organization's people: every member may read the list; owners and admins change roles,
 * remove members and invite people (each only below their own role); the owner hands the
 * organization over.
 */
function MembersPage() {
  const me = useSignedIn().member;
  const manager = me.role === 'owner' || me.role === 'admin';
  return (
    <AdminPage
      title="Members"
      description={
        manager
          ? 'Who is in the organization and what each may do. You manage members and invites below your own role.'
          : `Who is in the organization. ${ROLE_DESCRIPTIONS[me.role]} Owners and admins manage members.`
      }
    >
      <Section title="People">
        <MembersList />
      </Section>
      {manager && <InvitesSection />}
    </AdminPage>
  );
}

export const Route = createLazyRoute('/app/members')({ component: MembersPage });
