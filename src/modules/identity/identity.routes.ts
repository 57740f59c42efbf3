import Type from 'typebox';
import { requirePrincipal } from '../../http/access.ts';
import { Id, Nullable } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { CREDENTIAL_KINDS, MODES, SCOPES, type Scope } from '../credentials/scopes.schemas.ts';
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

// Principals and their scope sets are remembered across requests (per key, per role), so the
// catalogue-ordered list is made once per set rather than on every call.
const scopeLists = new WeakMap<ReadonlySet<Scope>, Scope[]>();
function scopeList(scopes: ReadonlySet<Scope>): Scope[] {
  let list = scopeLists.get(scopes);
  if (!list) scopeLists.set(scopes, (list = SCOPES.filter((scope) => scopes.has(scope))));
  return list;
}

export function registerIdentityRoutes(
  app: HttpServer,
  deps: { organizations: Pick<OrganizationsService, 'get'>; members: Pick<MembersService, 'find'> },
): void {
  app.get('/v1/identity', {
    config: { access: { scope: null } },
    schema: { tags: ['Identity'], summary: 'Who is calling: organization, member, credential, mode and scopes', response: { 200: IdentitySchema } },
    handler: async (request) => {
      const principal = requirePrincipal(request);
      const organization = await deps.organizations.get(principal.organizationId);
      // The member authentication has just read (remembered for a second): no second read.
      const member = principal.memberId ? ((await deps.members.find(principal.organizationId, principal.memberId)) ?? null) : null;
      return {
        object: 'identity' as const,
        organization,
        member,
        credential: { kind: principal.kind, id: principal.credentialId },
        mode: principal.mode,
        connection_id: principal.connectionId,
        scopes: scopeList(principal.scopes),
      };
    },
  });
}
