import Type from 'typebox';
import { requirePrincipal } from '../../http/access.ts';
import { Id, Nullable } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { CREDENTIAL_KINDS, MODES, SCOPES } from '../credentials/scopes.schemas.ts';
import { MemberSchema } from '../members/members.schemas.ts';
import type { MembersService } from '../members/index.ts';
import { OrganizationSchema } from '../organizations/organizations.schemas.ts';
import type { OrganizationsService } from '../organizations/index.ts';

export const IdentitySchema = Type.Object({
  object: Type.Literal('identity'),
  organization: OrganizationSchema,
  member: Nullable(MemberSchema),
  credential: Type.Object({ kind: Type.Enum(CREDENTIAL_KINDS), id: Type.String() }),
  mode: Nullable(Type.Enum(MODES)),
  connection_id: Nullable(Id('connection')),
  scopes: Type.Array(Type.Enum(SCOPES)),
});

export function registerIdentityRoutes(
  app: HttpServer,
  deps: { organizations: Pick<OrganizationsService, 'get'>; members: Pick<MembersService, 'findForCredential'> },
): void {
  app.get('/v1/identity', {
    config: { access: { scope: null } },
    schema: { tags: ['Identity'], summary: 'Who is calling: organization, member, credential, mode and scopes', response: { 200: IdentitySchema } },
    handler: async (request) => {
      const principal = requirePrincipal(request);
      const [organization, member] = await Promise.all([
        deps.organizations.get(principal.organizationId),
        // The member authentication has just read (remembered for a second): no second read.
        principal.memberId ? deps.members.findForCredential(principal.organizationId, principal.memberId).then((member) => member ?? null) : null,
      ]);
      return {
        object: 'identity' as const,
        organization,
        member,
        credential: { kind: principal.kind, id: principal.credentialId },
        mode: principal.mode,
        connection_id: principal.connectionId,
        scopes: SCOPES.filter((scope) => principal.scopes.has(scope)),
      };
    },
  });
}
