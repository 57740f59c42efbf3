import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { RunEventListQuery, RunEventListSchema, RunListQuery, RunListSchema, RunSchema, TriggeredRunSchema, TriggerRunBody } from './runs.schemas.ts';
import type { RunsService } from './runs.service.ts';

const tags = ['Runs'];
const read: Access = { scope: 'runs:read' };
const write: Access = { scope: 'runs:write' };

export function registerRunsRoutes(app: HttpServer, service: RunsService): void {
  app.post('/v1/runs', {
    // A retried trigger must never start a second run.
    config: { access: write, idempotency: 'required' },
    schema: {
      tags,
      summary: 'Start a run of an automation now (trigger `api`), or a dry run on a virtual clock that sends nothing and answers with its event log',
      body: TriggerRunBody,
      response: { 201: TriggeredRunSchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(await service.trigger({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.get('/v1/runs', {
    config: { access: read },
    schema: { tags, summary: 'List runs, newest first', querystring: RunListQuery, response: { 200: RunListSchema } },
    handler: async (request) => {
      const { automation_id, status, conversation_id, version, ...list } = request.query;
      return service.list(requirePrincipal(request), { automationId: automation_id, status, conversationId: conversation_id, version }, toPageRequest(list));
    },
  });

  app.get('/v1/runs/:id', {
    config: { access: read },
    schema: { tags, summary: 'Get a run', params: PathId('run'), response: { 200: RunSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.post('/v1/runs/:id/cancel', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Cancel a run: the step executing now finishes, nothing after it runs, the conversation goes back to `api`',
      params: PathId('run'),
      response: { 200: RunSchema },
    },
    handler: async (request) => service.cancel({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.get('/v1/runs/:id/events', {
    config: { access: read },
    schema: {
      tags,
      summary: "A run's event log in order, paged by `seq` (`after_seq`)",
      params: PathId('run'),
      querystring: RunEventListQuery,
      response: { 200: RunEventListSchema },
    },
    handler: async (request) => service.listEvents(requirePrincipal(request), request.params.id, request.query.after_seq ?? 0, request.query.limit ?? 100),
  });
}
