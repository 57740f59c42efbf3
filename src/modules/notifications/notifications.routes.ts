import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import {
  CreateBatchBody,
  CreateNotificationBody,
  NotificationBatchSchema,
  NotificationListQuery,
  NotificationListSchema,
  NotificationSchema,
  ReplayBody,
} from './notifications.schemas.ts';
import type { NotificationsService } from './notifications.service.ts';

const tags = ['Notifications'];
const read: Access = { scope: 'notifications:read' };
const write: Access = { scope: 'notifications:write' };
const params = PathId('notification');

export function registerNotificationsRoutes(app: HttpServer, service: NotificationsService): void {
  app.post('/v1/notifications', {
    config: { access: write, idempotency: 'required' },
    schema: {
      tags,
      summary: 'Send a notification',
      description:
        "Checks and stores the notification (`scheduled` or `queued`) and answers at once; it is sent at `send_at` through the number's pacing, or ends `expired`. A `dedupe_key` held by a notification of the last 24 hours answers that one, with 200.",
      body: CreateNotificationBody,
      response: { 201: NotificationSchema, 200: NotificationSchema },
    },
    handler: async (request, reply) => {
      const { notification, created } = await service.create({ principal: requirePrincipal(request), requestId: request.id }, request.body);
      return reply.code(created ? 201 : 200).send(notification);
    },
  });

  app.post('/v1/notifications/batch', {
    config: { access: write, idempotency: 'required' },
    schema: {
      tags,
      summary: 'Send a notification to up to 1,000 recipients',
      description:
        "One template, each recipient with its own parameters. `all_or_nothing` (the default) refuses the whole batch if any recipient is refused; `partial` creates the good ones and lists the others in the batch's `errors`. The sends are spaced at the number's ceiling.",
      body: CreateBatchBody,
      response: { 201: NotificationBatchSchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(await service.createBatch({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.get('/v1/notifications/batches/:id', {
    config: { access: read },
    schema: {
      tags,
      summary: 'Get a notification batch, with its progress by status',
      params: PathId('notificationBatch'),
      response: { 200: NotificationBatchSchema },
    },
    handler: async (request) => service.getBatch(requirePrincipal(request), request.params.id),
  });

  app.get('/v1/notifications', {
    config: { access: read },
    schema: { tags, summary: 'List notifications', querystring: NotificationListQuery, response: { 200: NotificationListSchema } },
    handler: async (request) => {
      const { status, batch_id, schedule_id, connection_id, contact_id, template_id, ...list } = request.query;
      return service.list(requirePrincipal(request), { status, batch_id, schedule_id, connection_id, contact_id, template_id }, toPageRequest(list));
    },
  });

  app.get('/v1/notifications/:id', {
    config: { access: read },
    schema: { tags, summary: 'Get a notification', params, response: { 200: NotificationSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.post('/v1/notifications/:id/cancel', {
    config: { access: write },
    schema: {
      tags,
      summary: 'Cancel a notification that has not been sent',
      description: 'Only a `scheduled` or `queued` notification can be canceled; from `sending` on, 409 `invalid_state`.',
      params,
      response: { 200: NotificationSchema },
    },
    handler: async (request) => service.cancel({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.post('/v1/notifications/:id/replay', {
    config: { access: write, idempotency: 'required' },
    schema: {
      tags,
      summary: 'Send a failed or expired notification again, as a new one',
      description: 'Creates a new notification with `replay_of`; the original gets `replayed_by`. The template must still be approved.',
      params,
      body: ReplayBody,
      response: { 201: NotificationSchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(await service.replay({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body ?? {})),
  });
}
