import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { requirePrincipal, type Access } from '../../http/access.ts';
import { toPageRequest } from '../../http/list-query.ts';
import { DeletedResponse, PathId } from '../../http/schemas.ts';
import type { HttpServer } from '../../http/server.ts';
import { AppError } from '../../lib/errors.ts';
import { consentPage, errorPage, signInPage } from './oauth-pages.ts';
import {
  AuthorizationServerMetadataSchema,
  AuthorizedAppListQuery,
  AuthorizedAppListSchema,
  AuthorizeQuery,
  ConsentForm,
  OauthErrorSchema,
  ProtectedResourceMetadataSchema,
  RegisterClientBody,
  RegisteredClientSchema,
  RevokeForm,
  SignInForm,
  TokenForm,
  TokenResponseSchema,
} from './oauth.schemas.ts';
import { OauthError, type AuthorizeOutcome, type OauthService } from './oauth.service.ts';

const tags = ['OAuth'];
const metadataAccess: Access = { public: true, reason: 'OAuth discovery documents (RFC 8414, RFC 9728) are public by definition.', rateLimit: false };
const protocolAccess: Access = {
  public: true,
  reason: 'OAuth endpoints authenticate with their own protocol (PKCE, codes, refresh tokens); limited per source address like every unauthenticated request.',
};
const pageAccess: Access = {
  public: true,
  reason: 'The consent page signs the person in with their password; the sealed request it carries binds each form to one authorization request.',
};
/** Members see and revoke their own grants; owners and admins every grant of the organization (the service decides). */
const appsAccess: Access = { scope: null, credentials: ['dashboard_token'] };
const FORM_BODY_LIMIT_BYTES = 16 * 1024;
const FORM = 'application/x-www-form-urlencoded';

/** Form fields; a field sent twice becomes an array, which the string schemas then refuse (RFC 6749 §3.1: no parameter twice). */
function parseForm(body: string): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of new URLSearchParams(body)) {
    const existing = fields[name];
    fields[name] = existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return { ...fields };
}

function registerFormParser(scope: HttpServer): void {
  scope.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT_BYTES }, (_request, body, done) => done(null, parseForm(String(body))));
}

function sendOauthError(reply: FastifyReply, error: OauthError) {
  return reply
    .code(error.status)
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .send({ error: error.error, error_description: error.message });
}

/** The pages carry sealed requests and answer with codes: never cached, framed or leaked through a Referer. */
function sendPage(reply: FastifyReply, status: number, html: string) {
  return (
    reply
      .code(status)
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY')
      // No form-action: browsers apply it to the redirect that follows a form, which goes to the app.
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
      .send(html)
  );
}

function answer(reply: FastifyReply, outcome: AuthorizeOutcome, redirectStatus: 302 | 303) {
  switch (outcome.kind) {
    case 'redirect':
      return reply.header('cache-control', 'no-store').redirect(outcome.location, redirectStatus);
    case 'error_page':
      return sendPage(reply, outcome.status, errorPage(outcome.message));
    case 'sign_in':
      return sendPage(reply, outcome.status, signInPage(outcome.view));
    case 'consent':
      return sendPage(reply, 200, consentPage(outcome.view));
  }
}

function isValidation(error: unknown): error is AppError {
  return error instanceof AppError && error.code === 'validation_failed';
}

export function registerOauthRoutes(app: HttpServer, service: OauthService): void {
  app.get('/.well-known/oauth-authorization-server', {
    config: { access: metadataAccess },
    schema: { tags, summary: 'Authorization server metadata (RFC 8414)', response: { 200: AuthorizationServerMetadataSchema } },
    handler: async () => service.authorizationServerMetadata(),
  });
  for (const which of ['mcp', 'v1'] as const) {
    app.get(`/.well-known/oauth-protected-resource/${which}`, {
      config: { access: metadataAccess },
      schema: {
        tags,
        summary: `Protected resource metadata of ${which === 'mcp' ? 'the tool server (/mcp)' : 'the /v1 API'} (RFC 9728)`,
        response: { 200: ProtectedResourceMetadataSchema },
      },
      handler: async () => service.protectedResourceMetadata(which),
    });
  }

  app.get('/v1/authorized-apps', {
    config: { access: appsAccess },
    schema: {
      tags,
      summary: 'The apps authorized in the organization (owners and admins: all; other members: their own)',
      querystring: AuthorizedAppListQuery,
      response: { 200: AuthorizedAppListSchema },
    },
    handler: async (request) => service.listAuthorizedApps(requirePrincipal(request), toPageRequest(request.query)),
  });
  app.delete('/v1/authorized-apps/:id', {
    config: { access: appsAccess },
    schema: {
      tags,
      summary: 'Revoke an authorized app: its refresh and access tokens stop working at once',
      params: PathId('oauthGrant'),
      response: { 200: DeletedResponse('authorized_app') },
    },
    handler: async (request) => service.revokeAuthorizedApp({ principal: requirePrincipal(request), requestId: request.id }, request.params.id),
  });

  // The protocol endpoints answer in OAuth's JSON error format; what is not theirs to answer (a
  // rate limit, an outage) goes on to the service's own error handler.
  void app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    registerFormParser(scope);
    scope.setErrorHandler(async (error: FastifyError | AppError, request: FastifyRequest, reply) => {
      if (error instanceof OauthError) return sendOauthError(reply, error);
      const registering = request.routeOptions.url === '/oauth/register';
      if (isValidation(error)) return sendOauthError(reply, new OauthError(registering ? 'invalid_client_metadata' : 'invalid_request', error.message));
      if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
        return sendOauthError(reply, new OauthError('invalid_request', `The body must be ${registering ? 'application/json' : FORM}.`));
      }
      // Any other refusal of the request itself (a body that does not parse) is OAuth's invalid_request:
      // these routes declare OAuth's error body for 400, which the service's envelope would not fit.
      if (error.statusCode === 400) return sendOauthError(reply, new OauthError(registering ? 'invalid_client_metadata' : 'invalid_request', error.message));
      throw error;
    });
    const formOnly = async (request: FastifyRequest) => {
      if (!(request.headers['content-type'] ?? '').toLowerCase().startsWith(FORM)) throw new OauthError('invalid_request', `The body must be ${FORM}.`);
    };

    scope.post('/oauth/register', {
      config: { access: protocolAccess },
      bodyLimit: FORM_BODY_LIMIT_BYTES,
      schema: {
        tags,
        summary: 'Register a client (RFC 7591): public, with PKCE; unused for 30 days, it expires',
        body: RegisterClientBody,
        response: { 201: RegisteredClientSchema, 400: OauthErrorSchema },
      },
      handler: async (request, reply) =>
        reply
          .code(201)
          .header('cache-control', 'no-store')
          .send(await service.register(request.body)),
    });

    scope.post('/oauth/token', {
      config: { access: protocolAccess },
      preValidation: formOnly,
      schema: {
        tags,
        summary: 'Exchange an authorization code, or rotate a refresh token, for an access token (RFC 6749 §4.1.3, §6)',
        consumes: [FORM],
        body: TokenForm,
        response: { 200: TokenResponseSchema, 400: OauthErrorSchema, 401: OauthErrorSchema },
      },
      handler: async (request, reply) =>
        reply
          .header('cache-control', 'no-store')
          .header('pragma', 'no-cache')
          .send(await service.token(request.body)),
    });

    scope.post('/oauth/revoke', {
      config: { access: protocolAccess },
      preValidation: formOnly,
      schema: { tags, summary: 'Revoke a refresh token (and its whole grant) or an access token (RFC 7009); always 200', consumes: [FORM], body: RevokeForm },
      handler: async (request, reply) => {
        await service.revoke(request.body);
        return reply.code(200).header('cache-control', 'no-store').send();
      },
    });
  });

  // The browser's side: pages, and redirects back to the app.
  void app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    registerFormParser(scope);
    scope.setErrorHandler(async (error: FastifyError | AppError, _request, reply) => {
      if (isValidation(error)) return sendPage(reply, 400, errorPage(`The request is malformed: ${error.message}`));
      if (error instanceof AppError && error.status < 500) {
        for (const [name, value] of Object.entries(error.headers)) void reply.header(name, value);
        return sendPage(reply, error.status, errorPage(error.message));
      }
      throw error;
    });

    scope.get('/oauth/authorize', {
      config: { access: pageAccess },
      schema: {
        tags,
        summary: 'Start an authorization (code with PKCE S256): the sign-in and consent page, or a redirect back with an error',
        querystring: AuthorizeQuery,
      },
      handler: async (request, reply) => answer(reply, await service.authorize(request.query), 302),
    });
    scope.post('/oauth/authorize/sign-in', {
      config: { access: pageAccess },
      schema: { tags, summary: "The consent page's sign-in form (HTML)", consumes: [FORM], body: SignInForm },
      handler: async (request, reply) => answer(reply, await service.signIn(request.body), 303),
    });
    scope.post('/oauth/authorize/consent', {
      config: { access: pageAccess },
      schema: {
        tags,
        summary: "The consent page's decision (HTML): redirects back to the app with a code, or with access_denied",
        consumes: [FORM],
        body: ConsentForm,
      },
      handler: async (request, reply) => answer(reply, await service.decide(request.body), 303),
    });
  });
}
