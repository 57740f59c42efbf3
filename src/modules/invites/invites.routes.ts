import { bearerCredential, requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { DashboardTokenSchema } from '../auth/auth.schemas.ts';
import { setRefreshCookie } from '../auth/index.ts';
import { AcceptInviteBody, CreateInviteBody, InviteListQuery, InviteListSchema, InviteSchema } from './invites.schemas.ts';
import type { InvitesService } from './invites.service.ts';

/** Invites are managed in the dashboard by owners and admins, like the members they become. */
const manage: Access = { scope: null, credentials: ['dashboard_token'], roles: ['owner', 'admin'] };
/** The invited person has no credential of this organization yet: the token in the body is theirs. */
const accept: Access = {
  public: true,
  reason: 'Accepting an invite creates a credential, proven by the invite token (and the dashboard token of an existing account); limited per source address.',
};
const tags = ['Invites'];

export function registerInvitesRoutes(app: HttpServer, service: InvitesService, options: { secureCookies: boolean }): void {
  app.post('/v1/invites', {
    config: { access: manage },
    schema: {
      tags,
      summary: 'Invite a person by email (the link is mailed; the token is never returned)',
      body: CreateInviteBody,
      response: { 201: InviteSchema },
    },
    handler: async (request, reply) => {
      const invite = await service.create({ principal: requirePrincipal(request), requestId: request.id }, request.body);
      return reply.code(201).send(invite);
    },
  });

  app.get('/v1/invites', {
    config: { access: manage },
    schema: { tags, summary: 'List invites', querystring: InviteListQuery, response: { 200: InviteListSchema } },
    handler: async (request) => {
      const { status, ...list } = request.query;
      return service.list(requirePrincipal(request).organizationId, { status }, toPageRequest(list));
    },
  });

  app.get('/v1/invites/:id', {
    config: { access: manage },
    schema: { tags, summary: 'Get an invite', params: PathId('invite'), response: { 200: InviteSchema } },
    handler: async (request) => service.get(requirePrincipal(request).organizationId, request.params.id),
  });

  app.post('/v1/invites/:id/resend', {
    config: { access: manage },
    schema: {
      tags,
      summary: 'Mail a pending or expired invite again, with a new link valid 7 days (the old link stops working)',
      params: PathId('invite'),
      response: { 200: InviteSchema },
    },
    handler: async (request) => service.resend({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.delete('/v1/invites/:id', {
    config: { access: manage },
    schema: { tags, summary: 'Revoke a pending invite (its link stops working)', params: PathId('invite'), response: { 200: InviteSchema } },
    handler: async (request) => service.revoke({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.post('/v1/invites/accept', {
    config: { access: accept },
    schema: {
      tags,
      summary: 'Accept an invite and get a dashboard token (a new person sets a password; an existing account sends its dashboard token)',
      body: AcceptInviteBody,
      response: { 200: DashboardTokenSchema },
    },
    handler: async (request, reply) => {
      const session = await service.accept(request.body, bearerCredential(request.headers.authorization), request.id);
      setRefreshCookie(reply, session, { secure: options.secureCookies });
      return session.body;
    },
  });
}
