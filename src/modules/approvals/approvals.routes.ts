import type { FastifyRequest } from 'fastify';
import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { ApprovalListQuery, ApprovalListSchema, ApprovalSchema, DecideBody } from './approvals.schemas.ts';
import type { ApprovalsService } from './approvals.service.ts';

const tags = ['Approvals'];
// Approvals are part of runs: they share the runs' scopes. Deciding needs runs:write, which among
// members only owners and admins hold; a viewer is refused by role before anything else.
const read: Access = { scope: 'runs:read' };
const decide: Access = { scope: 'runs:write', roles: ['owner', 'admin'] };

/** A decision's only field, `comment`, is optional: no body is `{}`. */
async function bodyOptional(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}

export function registerApprovalsRoutes(app: HttpServer, service: ApprovalsService): void {
  app.get('/v1/approvals', {
    config: { access: read },
    schema: { tags, summary: 'List approvals, newest first', querystring: ApprovalListQuery, response: { 200: ApprovalListSchema } },
    handler: async (request) => {
      const { status, automation_id, run_id, ...list } = request.query;
      return service.list(requirePrincipal(request), { status, automationId: automation_id, runId: run_id }, toPageRequest(list));
    },
  });

  app.get('/v1/approvals/:id', {
    config: { access: read },
    schema: { tags, summary: 'Get an approval', params: PathId('approval'), response: { 200: ApprovalSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.post('/v1/approvals/:id/approve', {
    config: { access: decide },
    preValidation: bodyOptional,
    schema: {
      tags,
      summary: 'Approve: the run carries out the frozen action, then goes on from the action step',
      params: PathId('approval'),
      body: DecideBody,
      response: { 200: ApprovalSchema },
    },
    handler: async (request) => service.approve({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body.comment),
  });

  app.post('/v1/approvals/:id/reject', {
    config: { access: decide },
    preValidation: bodyOptional,
    schema: {
      tags,
      summary: 'Reject: the run takes the step’s `rejected` branch (none: it ends completed)',
      params: PathId('approval'),
      body: DecideBody,
      response: { 200: ApprovalSchema },
    },
    handler: async (request) => service.reject({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body.comment),
  });
}
