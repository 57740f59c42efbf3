import { requirePrincipal } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { DeletedResponse, PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import {
  CreateWebhookEndpointBody,
  RotatedSecretSchema,
  UpdateWebhookEndpointBody,
  WebhookDeliveryListQuery,
  WebhookDeliveryListSchema,
  WebhookDeliverySchema,
  WebhookEndpointListQuery,
  WebhookEndpointListSchema,
  WebhookEndpointSchema,
  WebhookEndpointWithSecretSchema,
  WebhookTestSchema,
} from './webhook-endpoints.schemas.ts';
import type { WebhookEndpointsService } from './webhook-endpoints.service.ts';

const read = { access: { scope: 'webhooks:read' as const } };
const write = { access: { scope: 'webhooks:write' as const } };
const tags = ['Webhook endpoints'];

export function registerWebhookEndpointsRoutes(app: HttpServer, service: WebhookEndpointsService): void {
  app.get('/v1/webhook-endpoints', {
    config: read,
    schema: {
      tags,
      summary: 'List webhook endpoints (never with their secrets)',
      querystring: WebhookEndpointListQuery,
      response: { 200: WebhookEndpointListSchema },
    },
    handler: async (request) => service.list(requirePrincipal(request), toPageRequest(request.query)),
  });

  app.post('/v1/webhook-endpoints', {
    config: { ...write, waitsOnNetwork: true },
    schema: {
      tags,
      summary: 'Create a webhook endpoint (the only response with its secret)',
      body: CreateWebhookEndpointBody,
      response: { 201: WebhookEndpointWithSecretSchema },
    },
    handler: async (request, reply) =>
      reply.code(201).send(await service.create({ principal: requirePrincipal(request), requestId: request.id }, request.body)),
  });

  app.get('/v1/webhook-endpoints/:id', {
    config: read,
    schema: { tags, summary: 'Get a webhook endpoint', params: PathId('webhookEndpoint'), response: { 200: WebhookEndpointSchema } },
    handler: async (request) => service.get(requirePrincipal(request), request.params.id),
  });

  app.patch('/v1/webhook-endpoints/:id', {
    config: { ...write, waitsOnNetwork: true },
    schema: {
      tags,
      summary: 'Change the URL, events, description or status',
      params: PathId('webhookEndpoint'),
      body: UpdateWebhookEndpointBody,
      response: { 200: WebhookEndpointSchema },
    },
    handler: async (request) => service.update({ principal: requirePrincipal(request), requestId: request.id }, request.params.id, request.body),
  });

  app.delete('/v1/webhook-endpoints/:id', {
    config: write,
    schema: { tags, summary: 'Delete a webhook endpoint', params: PathId('webhookEndpoint'), response: { 200: DeletedResponse('webhook_endpoint') } },
    handler: async (request) => service.delete({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.post('/v1/webhook-endpoints/:id/test', {
    config: { ...write, waitsOnNetwork: true },
    schema: { tags, summary: 'Send a ping now and report the answer', params: PathId('webhookEndpoint'), response: { 200: WebhookTestSchema } },
    handler: async (request) => service.test(requirePrincipal(request), request.params.id),
  });

  app.post('/v1/webhook-endpoints/:id/rotate-secret', {
    config: write,
    schema: {
      tags,
      summary: 'Issue a new secret; the old one keeps signing for 24 hours',
      params: PathId('webhookEndpoint'),
      response: { 200: RotatedSecretSchema },
    },
    handler: async (request) => service.rotateSecret({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  app.get('/v1/webhook-endpoints/:id/deliveries', {
    config: read,
    schema: {
      tags,
      summary: 'The delivery attempts of an endpoint',
      params: PathId('webhookEndpoint'),
      querystring: WebhookDeliveryListQuery,
      response: { 200: WebhookDeliveryListSchema },
    },
    handler: async (request) => {
      const { status, ...list } = request.query;
      return service.listDeliveries(requirePrincipal(request), request.params.id, { status }, toPageRequest(list));
    },
  });

  app.post('/v1/webhook-deliveries/:id/replay', {
    config: { ...write, waitsOnNetwork: true },
    schema: { tags, summary: "Send one attempt's event again, as a new attempt", params: PathId('webhookDelivery'), response: { 200: WebhookDeliverySchema } },
    handler: async (request) => service.replay(requirePrincipal(request), request.params.id),
  });
}
