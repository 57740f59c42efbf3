import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RawServerDefault,
} from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { AppError, errorBody, invalidParam } from '../lib/errors.ts';
import { discardRequestBody } from '../lib/request-body.ts';
import { newId } from '../lib/ids.ts';
import { parseJsonBody } from './json-body.ts';
import { routeHooks, routeMethods } from './route-hooks.ts';
import { createSchemaCompilers } from './schema-compilers.ts';
import { validationError } from './validation.ts';

export type HttpServer = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

export interface HttpServerOptions {
  publicBaseUrl: string;
  logLevel: string;
  trustProxy: boolean;
  /** Seconds a client is told to wait when the service is draining or its store is unreachable. */
  retryAfterSeconds?: number;
  /** Recognises failures of a dependency (the store) that a retry may cure, reported as 503. */
  isUnavailable?: (error: unknown) => boolean;
}

export const BODY_LIMIT_BYTES = 1024 * 1024;

interface KnownRoute {
  pattern: RegExp;
  method: string;
}

function routePattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

/**
 * The Fastify instance with every convention that has no business words in it: request ids, strict
 * validation, the error envelope for every failure (including the ones Fastify itself raises), 404
 * and 405 for unknown paths and methods, and 503 while draining.
 */
export function createHttpServer(options: HttpServerOptions): HttpServer {
  const app = Fastify({
    logger: {
      level: options.logLevel,
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'], censor: '[redacted]' },
    },
    genReqId: () => newId('request'),
    logController: new LogController({ requestIdLogLabel: 'request_id' }),
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: options.trustProxy,
    return503OnClosing: false,
    ajv: undefined,
    schemaErrorFormatter: (errors, dataVar) => validationError(errors, dataVar),
    // An id of any length reaches its route, which answers what it answers for any unknown id; the
    // router's own limit (100) would refuse it as a bad URL before any hook had run.
    routerOptions: { maxParamLength: MAX_URL_BYTES },
    rewriteUrl: (raw) => {
      const url = raw.url ?? '/';
      if (!isMalformedPath(url)) return url;
      malformedUrls.add(raw);
      return MALFORMED_URL_ROUTE;
    },
    // The router's last word on a URL it cannot take, which no hook sees; the rewrite above sends
    // every such URL through the not-found handler first, with its hooks.
    frameworkErrors: (error, request, reply) => {
      void sendError(reply, request, new AppError('route_not_found', 'The path is not a URL this service can read.', { cause: error }));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  const malformedUrls = new WeakSet<object>();

  const compilers = createSchemaCompilers();
  app.setValidatorCompiler(compilers.validatorCompiler);
  app.setSerializerCompiler(compilers.serializerCompiler);
  app.decorate('compileSchemas', compilers.compileAll);
  // Only JSON bodies exist on /v1; modules that take other types (multipart media) add their parser.
  app.removeContentTypeParser('text/plain');
  // JSON is UTF-8 (RFC 8259) and is read as such: a body declared in another charset would be read
  // wrong, so it is refused. Keys are read strictly (json-body.ts). Scopes with parsers of their own
  // (the runtime pass-through, the provider's webhook) keep them.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      done(new AppError('unsupported_content_type', `JSON bodies are read as UTF-8; charset=${charset} is not taken.`), undefined);
      return;
    }
    try {
      // parseAs string: the body is a string.
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as AppError, undefined);
    }
  });

  let draining = false;
  const retryAfter = String(options.retryAfterSeconds ?? 5);

  const sendError = (reply: FastifyReply, request: FastifyRequest, error: AppError) => {
    // Also here: a URL Fastify cannot decode is refused before any hook has run.
    void reply.header('x-request-id', request.id);
    for (const [name, value] of Object.entries(error.headers)) void reply.header(name, value);
    if (error.code === 'service_unavailable' && !reply.hasHeader('retry-after')) void reply.header('retry-after', retryAfter);
    return reply
      .code(error.status)
      .type('application/json; charset=utf-8')
      .send(errorBody(error, request.id, options.publicBaseUrl));
  };

  app.decorate('sendError', sendError);

  // Callbacks rather than async functions where the work is synchronous: a promise per hook per
  // request is measurable on the cheapest routes.
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    done(draining ? new AppError('service_unavailable', 'The service is restarting; retry shortly.') : undefined);
  });

  app.addHook('preClose', async () => {
    draining = true;
  });

  // What no schema says and every route needs refused before anything reads the request: U+0000,
  // which PostgreSQL's text cannot hold (SQLite's can; both stores must answer alike, and neither
  // 500), and nesting deeper than any field of the API, which would only exhaust the recursion of
  // whatever walks the body next (the idempotency fingerprint).
  app.addHook('preValidation', (request, _reply, done) => {
    // The query and the path parameters come from parsers whose objects have prototypes of their own.
    const refusal =
      refusalIn(request.body, '') ?? refusalIn({ ...(request.query as object) }, '/query') ?? refusalIn({ ...(request.params as object) }, '/path');
    done(refusal ? invalidParam(refusal.at, refusal.message, refusal.code) : undefined);
  });

  // An API POST or DELETE without a body schema takes no body: `{}` (what many clients send) or
  // nothing. (The provider's webhook, the runtime pass-through and the sandbox read their own.)
  app.addHook('onRoute', (route) => {
    const methods = routeMethods(route);
    if (!route.url.startsWith('/v1/') || route.schema?.body !== undefined) return;
    if (!methods.some((method) => method === 'POST' || method === 'DELETE')) return;
    route.preValidation = [...routeHooks(route.preValidation), refuseBody];
  });

  const knownRoutes: KnownRoute[] = [];
  app.addHook('onRoute', (route) => {
    const methods = routeMethods(route);
    for (const method of methods) knownRoutes.push({ pattern: routePattern(route.url), method });
  });

  app.setNotFoundHandler((request, reply) => {
    if (malformedUrls.has(request.raw)) {
      return sendError(
        reply,
        request,
        new AppError(
          'route_not_found',
          'The path holds a percent-escape that does not decode (a bad escape such as %zz, or bytes that are not UTF-8 such as %C0%AF); no route has such a path.',
        ),
      );
    }
    const path = request.url.split('?')[0] ?? '/';
    const allowed = [...new Set(knownRoutes.filter((route) => route.pattern.test(path)).map((route) => route.method))];
    if (allowed.length > 0) {
      void reply.header('allow', allowed.join(', '));
      return sendError(reply, request, new AppError('method_not_allowed', `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}.`));
    }
    return sendError(reply, request, new AppError('route_not_found', `No route ${request.method} ${path}.`));
  });

  app.setErrorHandler(async (error: FastifyError | AppError, request, reply) => {
    // A client that writes its whole body before reading (most do) would see the connection reset
    // under its upload rather than this answer: the rest is read and thrown away first.
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') await discardRequestBody(request.raw, DISCARDED_BODY_LIMIT_BYTES);
    const appError =
      !(error instanceof AppError) && options.isUnavailable?.(error)
        ? new AppError('service_unavailable', 'A dependency of the service is unreachable; retry shortly.', { cause: error })
        : toAppError(error);
    if (appError.code === 'internal_error') {
      request.log.error({ err: error }, 'unhandled error');
    } else if (appError.status >= 500) {
      request.log.warn({ err: error, code: appError.code }, 'request failed');
    }
    return sendError(reply, request, appError);
  });

  return app;
}

/**
 * How much of a body refused as too large is still read (and thrown away) so that the client gets
 * its 413: far beyond any honest mistake; a body declared or sent larger is answered at once and the
 * connection closes under the rest.
 */
const DISCARDED_BODY_LIMIT_BYTES = 16 * 1024 * 1024;

/** Node's default limit on a request's header section, which the request line is part of. */
const MAX_URL_BYTES = 16 * 1024;

/**
 * Where `rewriteUrl` sends a URL whose path cannot be decoded. No route has it, so the not-found
 * handler answers, after the hooks; it tells this request by the raw request, not by the path.
 */
const MALFORMED_URL_ROUTE = '/malformed-url';

/** Whether the path (the query is read leniently elsewhere) has a percent-escape that does not decode to UTF-8. */
function isMalformedPath(url: string): boolean {
  const end = url.indexOf('?');
  const path = end === -1 ? url : url.slice(0, end);
  if (!path.includes('%')) return false;
  try {
    decodeURIComponent(path);
    return false;
  } catch {
    return true;
  }
}

/** Deeper than any field of the API nests (metadata values included). */
export const MAX_REQUEST_DEPTH = 32;

const escapePointer = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

interface Refusal {
  at: string;
  message: string;
  code: string;
}

function isJsonContainer(value: object): boolean {
  if (Array.isArray(value)) return true;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * The first thing no field of any route takes in a parsed request part, with its JSON pointer: a
 * string or key holding U+0000, or nesting past `MAX_REQUEST_DEPTH`.
 */
export function refusalIn(value: unknown, pointer: string, depth = 0): Refusal | undefined {
  const at = pointer || '/';
  if (typeof value === 'string')
    return value.includes('\0') ? { at, message: 'must not contain the NUL character (U+0000)', code: 'invalid_character' } : undefined;
  // Only what JSON parsing makes: a route that takes its body as a stream (the runtime pass-through)
  // or a buffer has nothing here to walk.
  if (typeof value !== 'object' || value === null || !isJsonContainer(value)) return undefined;
  if (depth >= MAX_REQUEST_DEPTH) return { at, message: `nests deeper than ${MAX_REQUEST_DEPTH} levels, which no field of the API does`, code: 'invalid' };
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = refusalIn(value[index], `${pointer}/${index}`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    const keyAt = `${pointer}/${escapePointer(key)}`;
    if (key.includes('\0')) return { at: keyAt, message: 'must not contain the NUL character (U+0000)', code: 'invalid_character' };
    const found = refusalIn(item, keyAt, depth + 1);
    if (found) return found;
  }
  return undefined;
}

async function refuseBody(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (body === undefined || body === null) return;
  if (typeof body === 'object' && !Array.isArray(body)) {
    const [first] = Object.keys(body);
    if (first === undefined) return;
    throw invalidParam(`/${escapePointer(first)}`, 'is not taken: this endpoint takes no body', 'unknown_field');
  }
  throw invalidParam('/', 'must be absent or {}: this endpoint takes no body', 'invalid_type');
}

const FASTIFY_ERRORS: Record<string, (error: FastifyError) => AppError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () => new AppError('body_too_large', `The body is larger than ${BODY_LIMIT_BYTES} bytes.`),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => new AppError('unsupported_content_type', 'This endpoint takes a JSON body with Content-Type: application/json.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => new AppError('malformed_json', 'The Content-Type is application/json but the body is empty.'),
  FST_ERR_CTP_INVALID_JSON_BODY: () => new AppError('malformed_json', 'The body is not valid JSON.'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => new AppError('malformed_json', 'The body is shorter or longer than its Content-Length.'),
};

function toAppError(error: FastifyError | AppError): AppError {
  if (error instanceof AppError) return error;
  const mapped = error.code ? FASTIFY_ERRORS[error.code] : undefined;
  if (mapped) return mapped(error);
  // Fastify's JSON parser (secure-json-parse) raises SyntaxError, or a plain 400 for a forbidden
  // __proto__ key; both are the client's malformed body.
  if (error instanceof SyntaxError || (error.statusCode === 400 && /prototype|JSON/i.test(error.message))) {
    return new AppError('malformed_json', 'The body is not valid JSON.', { cause: error });
  }
  if (error.validation) return validationError(error.validation, error.validationContext ?? 'body');
  return new AppError('internal_error', 'An unexpected error occurred.', { cause: error });
}

declare module 'fastify' {
  interface FastifyInstance {
    sendError(reply: FastifyReply, request: FastifyRequest, error: AppError): FastifyReply;
    /** Compiles every route schema not compiled yet (they compile on first use); throws the first failure. */
    compileSchemas(): void;
  }
}
