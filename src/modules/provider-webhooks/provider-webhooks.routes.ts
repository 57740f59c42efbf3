import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import type { Access } from '../../http/access.ts';
import { keepRawBodies, rawBodyOf, singleHeader } from '../../http/raw-body.ts';
import type { HttpServer } from '../../http/server.ts';
import type { ProviderWebhooksService } from './provider-webhooks.service.ts';

// The provider retries, and it batches: a history chunk can be large, and it must never be refused
// for its size or rate, or the provider would retry it for days.
const BODY_LIMIT_BYTES = 16 * 1024 * 1024;
const access: Access = { public: true, reason: 'the provider signs each webhook (X-Hub-Signature-256) or echoes the verify token', rateLimit: false };
const tags = ['Provider'];

export function registerProviderWebhooksRoutes(app: HttpServer, service: ProviderWebhooksService): void {
  void app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    keepRawBodies(scope, BODY_LIMIT_BYTES);

    scope.get('/provider/webhook', {
      config: { access },
      schema: {
        tags,
        summary: "The provider's subscription handshake",
        querystring: Type.Object({
          'hub.mode': Type.Optional(Type.String()),
          'hub.verify_token': Type.Optional(Type.String()),
          'hub.challenge': Type.Optional(Type.String({ maxLength: 256 })),
        }),
      },
      handler: async (request, reply) => reply.type('text/plain; charset=utf-8').send(service.handshake(request.query)),
    });

    scope.post('/provider/webhook', {
      config: { access },
      bodyLimit: BODY_LIMIT_BYTES,
      schema: { tags, summary: 'Webhooks from the provider: messages, statuses and account changes' },
      handler: async (request, reply) => {
        await service.receive(rawBodyOf(request), singleHeader(request, 'x-hub-signature-256'));
        return reply.code(200).type('application/json; charset=utf-8').send({ received: true });
      },
    });
  });
}
