import type { FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import Type from 'typebox';
import { requirePrincipal, type Access } from '../../http/access.ts';
import type { HttpServer } from '../../http/server.ts';
import type { RelayMethod } from '../../provider/whatsapp/relay.ts';
import type { CheckedRequest, RuntimeService } from './runtime.service.ts';

const PREFIX = '/runtime/';
const access: Access = { scope: 'runtime:proxy', credentials: ['connection_key'] };

const summary = "Pass-through to the provider's API for the key's number or business account";
const description = [
  "Relays the request to the provider's Graph API at `/{provider_version}/...` with the connection's",
  "own token, and answers the provider's status, bytes and headers as they came. The path must start",
  "with the key's phone number id or WhatsApp Business Account id, and is at most three segments deep.",
  'Bodies are relayed unread: JSON or form fields up to 1 MiB, multipart media uploads up to 100 MiB.',
  'The query is relayed as sent, but `access_token` and `appsecret_proof` are refused, and so is an',
  '`Idempotency-Key` header: the runtime keeps no record to replay. See docs/runtime.md.',
].join(' ');

const version = Type.String({ pattern: '^v\\d{1,3}\\.\\d{1,2}$', description: 'The Graph version, such as v24.0; relayed as given.' });
const node = Type.String({ description: "The key's phone number id or WhatsApp Business Account id." });
const edge = Type.String({ description: 'An edge of the node, such as messages, media or message_templates.' });
const edgeId = Type.String({ description: 'An id under the edge.' });

const ROUTES = [
  ['/runtime/:provider_version/:node', Type.Object({ provider_version: version, node })],
  ['/runtime/:provider_version/:node/:edge', Type.Object({ provider_version: version, node, edge })],
  ['/runtime/:provider_version/:node/:edge/:edge_id', Type.Object({ provider_version: version, node, edge, edge_id: edgeId })],
] as const;

export function registerRuntimeRoutes(app: HttpServer, service: RuntimeService): void {
  void app.register(async (plugin) => {
    // The body is streamed to the provider as it arrives, never parsed: whatever its type, the parser
    // hands on the request stream itself, and the relay counts it against its own limit.
    plugin.removeAllContentTypeParsers();
    plugin.addContentTypeParser('*', (_request, payload, done) => {
      done(null, payload);
    });

    // A request answered before its body was read (refused, or over the limit) closes its connection:
    // reading an unwanted upload to its end only to keep the connection alive would cost up to 100 MiB.
    plugin.addHook('onSend', async (request, reply, payload) => {
      if (!request.raw.complete) void reply.header('connection', 'close');
      return payload;
    });

    const checked = new WeakMap<FastifyRequest, CheckedRequest>();

    // One route per depth rather than a wildcard: the provider's paths for a number or an account are
    // at most three segments deep (`/{phone_number_id}/message_qrdls/{code}`), and fixed depths keep
    // every route a plain parametric one, documented and listed in the access table like the others.
    for (const [url, params] of ROUTES) {
      plugin.route({
        method: ['GET', 'POST', 'DELETE'],
        url,
        exposeHeadRoute: false,
        config: { access, waitsOnNetwork: true },
        schema: { tags: ['Runtime'], summary, description, params },
        // After authentication and the rate limit (server-level hooks run first), before any body is read.
        onRequest: async (request) => {
          const raw = request.raw.url ?? '';
          checked.set(request, service.check(raw.startsWith(PREFIX) ? raw.slice(PREFIX.length) : '', request.headers));
        },
        handler: async (request, reply) => {
          const check = checked.get(request);
          if (!check) throw new Error('the runtime route ran without its checks');
          const answer = await service.relay(requirePrincipal(request), {
            ...check,
            method: request.method as RelayMethod,
            headers: request.headers,
            body: request.body as Readable | undefined,
          });
          return reply.code(answer.status).headers(answer.headers).send(answer.body);
        },
      });
    }
  });
}
