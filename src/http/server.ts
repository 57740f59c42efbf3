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
import { AppError, invalidParam } from '../lib/errors.ts';
import { newId } from '../lib/ids.ts';
import { errorBody } from './error-envelope.ts';
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
    frameworkErrors: (error, request, reply) => {
      void sendError(reply, request, new AppError('route_not_found', 'The path is not a valid URL.', { cause: error }));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const compilers = createSchemaCompilers();
  app.setValidatorCompiler(compilers.validatorCompiler);
  app.setSerializerCompiler(compilers.serializerCompiler);
  app.decorate('compileSchemas', compilers.compileAll);
  // Only JSON bodies exist on /v1; modules that take other types (multipart media) add their parser.
  app.removeContentTypeParser('text/plain');

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

  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
    if (draining) throw new AppError('service_unavailable', 'The service is restarting; retry shortly.');
  });

  app.addHook('preClose', async () => {
    draining = true;
  });

  // PostgreSQL's text cannot hold U+0000 (SQLite's can): refused here, in every field of every route,
  // so that both stores answer alike and none answers 500.
  app.addHook('preValidation', async (request) => {
    const at = nulAt(request.body, '') ?? nulAt(request.query, '/query') ?? nulAt(request.params, '/path');
    if (at !== undefined) throw invalidParam(at, 'must not contain the NUL character (U+0000)', 'invalid_character');
  });

  const knownRoutes: KnownRoute[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) knownRoutes.push({ pattern: routePattern(route.url), method });
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = [...new Set(knownRoutes.filter((route) => route.pattern.test(path)).map((route) => route.method))];
    if (allowed.length > 0) {
      void reply.header('allow', allowed.join(', '));
      return sendError(reply, request, new AppError('method_not_allowed', `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}.`));
    }
    return sendError(reply, request, new AppError('route_not_found', `No route ${request.method} ${path}.`));
  });

  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
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

// Deeper than any request of the API nests: a body past it is refused by its schema anyway.
const MAX_NUL_SEARCH_DEPTH = 64;

const escapePointer = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/** The JSON pointer of the first string (value or key) holding U+0000 in a parsed request part, if any. */
export function nulAt(value: unknown, pointer: string, depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\0') ? pointer || '/' : undefined;
  if (typeof value !== 'object' || value === null || depth > MAX_NUL_SEARCH_DEPTH) return undefined;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = nulAt(value[index], `${pointer}/${index}`, depth + 1);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    const at = `${pointer}/${escapePointer(key)}`;
    if (key.includes('\0')) return at;
    const found = nulAt(item, at, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
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
