import swagger from '@fastify/swagger';
import type { HttpServer } from './server.ts';

/**
 * The OpenAPI 3.1 document, generated from the same route schemas that validate requests, with each
 * operation's credential rule (`x-access`) and required scope (`x-scope`) taken from its access
 * declaration. Must be registered before the routes it describes.
 */
export async function registerOpenApi(app: HttpServer, options: { publicBaseUrl: string; version: string }): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Messaging Service API',
        version: options.version,
        description: 'A JSON REST API for business messaging. Every error has a reference page under /docs/errors.',
      },
      servers: [{ url: options.publicBaseUrl }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: ({ schema, url, route }) => {
      const access = route.config?.access;
      const transformed: Record<string, unknown> = { ...(schema as Record<string, unknown>) };
      if (access && !access.public) {
        transformed.security = [{ bearer: [] }];
        transformed['x-scope'] = access.scope;
        transformed['x-access'] = { credentials: access.credentials ?? 'any', roles: access.roles ?? 'any' };
        // Every authenticated POST takes an Idempotency-Key (see idempotency.ts); send endpoints require it.
        if (route.method === 'POST') {
          transformed.headers = {
            type: 'object',
            properties: {
              'idempotency-key': {
                type: 'string',
                minLength: 1,
                maxLength: 255,
                description: 'Makes a retry of this request safe: the same key and body replay the first response for 24 hours.',
              },
            },
            required: route.config?.idempotency === 'required' ? ['idempotency-key'] : [],
          };
        }
      }
      return { schema: transformed, url };
    },
  });

  app.get('/v1/openapi.json', {
    config: { access: { public: true, reason: 'The public API description.', rateLimit: false } },
    schema: { hide: true },
    handler: async () => app.swagger(),
  });
}
