import { useMutation, useQueryClient } from '@tanstack/react-query';
import { createLazyRoute } from '@tanstack/react-router';
import { useApi, usePermissions } from '../../auth/SessionContext.tsx';
import { Badge, ConfirmButton, PagedList, tableClass, useCursorList } from '../../ui/admin.tsx';
import { useMemberName } from '../inbox/compose/members.ts';
import { fullTime } from '../inbox/format.ts';
import { DevelopersPage } from './DevelopersPage.tsx';
import styles from './developers.module.css';
import { ScopeList } from './fields.tsx';
import { developerKeys } from './queries.ts';
import type { AuthorizedApp } from './types.ts';

function AuthorizedAppsPage() {
  const { administer } = usePermissions();
  const list = useCursorList<AuthorizedApp>(developerKeys.authorizedApps, '/v1/authorized-apps');
  return (
    <DevelopersPage
      title="Authorized apps"
      description={
        administer
          ? 'Apps that members of the organization allowed to act for them through OAuth (a CRM, an AI assistant). Each acts within the scopes it was given and its member’s current role.'
          : 'Apps you allowed to act for you through OAuth. Each acts within the scopes you gave it and your current role.'
      }
    >
      <PagedList
        list={list}
        empty="No app is authorized. An app asks for access by sending you to the service’s consent page; once a member approves, it is listed here and can be revoked."
      >
        {(apps) => (
          <table className={tableClass}>
            <thead>
              <tr>
                <th scope="col">App</th>
                <th scope="col">Authorized by</th>
                <th scope="col">Reaches</th>
                <th scope="col">Scopes</th>
                <th scope="col">Authorized</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {apps.map((app) => (
                <AppRow key={app.id} app={app} />
              ))}
            </tbody>
          </table>
        )}
      </PagedList>
    </DevelopersPage>
  );
}

function AppRow({ app }: { app: AuthorizedApp }) {
  const api = useApi();
  const queryClient = useQueryClient();
  const memberName = useMemberName();
  const revoke = useMutation({
    mutationFn: () => api.delete(`/v1/authorized-apps/${app.id}`),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: developerKeys.authorizedApps }),
  });
  const who = memberName(app.member_id);
  return (
    <tr>
      <td>
        <div>{app.client.name}</div>
        {app.client.verified ? <Badge tone="good">verified</Badge> : <Badge tone="warn">unverified</Badge>}
        <div
          className={styles.muted}
          title={app.client.verified ? 'Identified by its metadata document: its host vouches for the name.' : 'It registered itself and chose its own name.'}
        >
          {app.client.id}
        </div>
      </td>
      <td>{who}</td>
      <td>{app.resource.endsWith('/mcp') ? 'The tool server (MCP)' : 'The REST API'}</td>
      <td>
        <ScopeList scopes={app.scopes} />
      </td>
      <td>{fullTime(app.created_at)}</td>
      <td>{fullTime(app.last_used_at)}</td>
      <td>
        <ConfirmButton
          label="Revoke"
          title={`Revoke ${app.client.name}?`}
          consequence={`${app.client.name} loses access at once: its access and refresh tokens stop working with its very next request. To connect it again, ${who === 'You' ? 'you' : who} would have to approve it anew.`}
          confirmLabel="Revoke access"
          onConfirm={() => revoke.mutateAsync()}
        />
      </td>
    </tr>
  );
}

export const Route = createLazyRoute('/app/developers/apps')({ component: AuthorizedAppsPage });
