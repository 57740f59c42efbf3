import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { DeletedResponse, PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import {
  CreateScheduleBody,
  OccurrenceListQuery,
  OccurrenceListSchema,
  PreviewScheduleBody,
  ScheduleListQuery,
  ScheduleListSchema,
  SchedulePreviewSchema,
  ScheduleSchema,
  UpdateScheduleBody,
} from './schedules.schemas.ts';
import type { SchedulesService } from './schedules.service.ts';

const tags = ['Schedules'];
// Schedules send notifications: they share the notifications' scopes (api.md).
const read: Access = { scope: 'notifications:read' };
const write: Access = { scope: 'notifications:write' };

export function registerSchedulesRoutes(app: HttpServer, service: SchedulesService): void {
  app.post('/v1/schedules', {
    config: { access: write },
    schema: { tags, summary: 'Create a schedule', body: CreateScheduleBody, response: { 201: ScheduleSchema } },
    handler: async (request, reply) =>
      reply.code(201).send(await service.create({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.post('/v1/schedules/preview', {
    config: { access: read },
    schema: {
      tags,
      summary: 'Preview a recurrence: its description and first occurrences from now, refused as creating it would be; nothing is stored',
      body: PreviewScheduleBody,
      response: { 200: SchedulePreviewSchema },
    },
    handler: async (request) => service.preview(request.body),
  });

  app.get('/v1/schedules', {
    config: { access: read },
    schema: { tags, summary: 'List schedules', querystring: ScheduleListQuery, response: { 200: ScheduleListSchema } },
    handler: async (request) => {
      const { status, ...list } = request.query;
      return service.list(requirePrincipal(request), { status }, toPageRequest(list));
    },
  });

  app.get('/v1/schedules/:id', {
    config: { access: read },
    schema: { tags, summary: 'Get a schedule', params: PathId('schedule'), response: { 200: ScheduleSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.patch('/v1/schedules/:id', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Update a schedule, pause it (`status: paused`) or resume it (`status: active`); any change requeues its next occurrence',
      params: PathId('schedule'),
      body: UpdateScheduleBody,
      response: { 200: ScheduleSchema },
    },
    handler: async (request) => service.update({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });

  app.delete('/v1/schedules/:id', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Delete a schedule: nothing more fires; what it created keeps its schedule_id',
      params: PathId('schedule'),
      response: { 200: DeletedResponse('schedule') },
    },
    handler: async (request) => service.delete({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.get('/v1/schedules/:id/occurrences', {
    config: { access: read },
    schema: {
      tags,
      summary: "A schedule's occurrences, newest first; `include=upcoming` adds the next ones, computed",
      params: PathId('schedule'),
      querystring: OccurrenceListQuery,
      response: { 200: OccurrenceListSchema },
    },
    handler: async (request) => {
      const { include, ...list } = request.query;
      return service.listOccurrences(requirePrincipal(request), request.params.id, { upcoming: include === 'upcoming' }, toPageRequest(list));
    },
  });
}
