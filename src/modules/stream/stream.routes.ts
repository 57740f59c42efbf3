import type { Readable } from 'node:stream';
import Type from 'typebox';
import { bearerCredential, requirePrincipal, type Access } from '../../http/access.ts';
import type { HttpServer } from '../../http/server.ts';
import { invalidParam } from '../../lib/errors.ts';
import { StreamHeaders, StreamQuery } from './stream.schemas.ts';
import type { StreamService } from './stream.service.ts';

// Dashboard tokens only (docs/stream.md#who-may-read-it): integrations have webhooks, and one scope
// cannot say which events a key may see when events span every resource.
const access: Access = { scope: null, credentials: ['dashboard_token'] };

const EVENT_STREAM = /(^|,)\s*text\/event-stream\s*(;|,|$)/i;

export function registerStreamRoutes(server: HttpServer, service: StreamService): void {
  server.get('/v1/stream', {
    // A HEAD would open a stream whose body nobody reads.
    exposeHeadRoute: false,
    config: { access },
    schema: {
      tags: ['Stream'],
      summary: "Live stream of the organization's events (Server-Sent Events)",
      description:
        'Each event is `id: <evt_ id>`, `event: <type>` and `data: <the event envelope, exactly as a webhook delivery carries it>`. ' +
        'Resume with `Last-Event-ID`; a comment every 15 s keeps the connection open; the stream ends with `stream.expired` when the dashboard token expires. See docs/stream.md.',
      headers: StreamHeaders,
      querystring: StreamQuery,
      response: {
        200: {
          description: 'A `text/event-stream` that stays open: the event envelopes as they are written, after the replay of a resume.',
          content: {
            'text/event-stream': {
              schema: Type.Unsafe<Readable>({ type: 'string', contentMediaType: 'text/event-stream', description: 'Server-Sent Events (docs/stream.md).' }),
            },
          },
        },
      },
    },
    handler: async (request, reply) => {
      if (!EVENT_STREAM.test(request.headers.accept)) {
        throw invalidParam('/header/accept', 'must include text/event-stream: this endpoint answers only with a Server-Sent Events stream', 'invalid_value');
      }
      const body = await service.open({
        principal: requirePrincipal(request),
        // The access hook has read it already; kept so the stream can check it again while it lasts.
        bearer: bearerCredential(request.headers.authorization)!,
        lastEventId: request.headers['last-event-id'] ?? request.query.last_event_id,
      });
      return reply.header('content-type', 'text/event-stream').header('cache-control', 'no-cache').header('x-accel-buffering', 'no').send(body);
    },
  });

  // Before the server stops listening: Node's close() waits for open responses, and a stream never ends by itself.
  server.addHook('preClose', () => service.close());
}
