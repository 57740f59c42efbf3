import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { AppError, errorBody } from '../../lib/errors.ts';
import { bodyTooLargeMessage, discardRefusedBody, isBodyTooLarge } from './body-size.ts';

/**
 * The HTTP conventions of the sandbox's own APIs (the control API, and any sandbox path that is
 * neither Graph nor control): JSON bodies only, and every failure in the service's error envelope
 * (`type`, `code`, `message`, `param`, `request_id`, `doc_url`, from the one catalogue of
 * lib/errors.ts), whatever the host application answers elsewhere.
 */

export function notFound(message: string): AppError {
  return new AppError('resource_not_found', message);
}

export function invalid(message: string, options: { param?: string; details?: { param: string; message: string }[] } = {}): AppError {
  return new AppError('validation_failed', message, {
    param: options.param ?? options.details?.[0]?.param ?? null,
    details: (options.details ?? []).map((detail) => ({ ...detail, code: 'invalid_value' })),
  });
}

/** The body, checked against its schema; a failure lists every offending field. */
export function check<T extends TSchema>(schema: T, body: unknown): Static<T> {
  if (Value.Check(schema, body)) return body;
  const details = Value.Errors(schema, body).map((error) => ({ param: error.instancePath || '/', message: error.message }));
  throw invalid('The request body is not valid for this control endpoint.', { details });
}

function toAppError(error: FastifyError | AppError, request: FastifyRequest): AppError {
  if (error instanceof AppError) return error;
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return new AppError('unsupported_content_type', 'Control endpoints take JSON bodies (Content-Type: application/json).');
  if (isBodyTooLarge(error)) return new AppError('body_too_large', bodyTooLargeMessage(request));
  if ((error.statusCode ?? 500) < 500) return invalid(error.message);
  request.log.error({ err: error }, 'sandbox control handler failed');
  return new AppError('internal_error', 'The sandbox failed to handle this control request.');
}

/**
 * Installs the JSON parser, the error envelope and the not-found answer on a sandbox scope.
 * `docsBaseUrl` is where the error reference (`/docs/errors/{code}`) is served: the host's.
 */
export function installControlConventions(app: FastifyInstance, notFoundHint: string, docsBaseUrl: string): void {
  const send = (reply: FastifyReply, request: FastifyRequest, error: AppError): FastifyReply =>
    reply
      .status(error.status)
      .type('application/json; charset=utf-8')
      .send(errorBody(error, request.id, docsBaseUrl));

  // The host's parsers would answer in its own words; inside this scope only these apply.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body: string, done) => {
    if (body.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body));
    } catch {
      done(new AppError('malformed_json', 'The request body is not valid JSON.'), undefined);
    }
  });

  app.setErrorHandler(async (error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    if (isBodyTooLarge(error)) await discardRefusedBody(request);
    return send(reply, request, toAppError(error, request));
  });

  app.setNotFoundHandler((request, reply) =>
    send(reply, request, new AppError('route_not_found', `No sandbox endpoint ${request.method} ${request.url.split('?')[0] ?? ''}. ${notFoundHint}`)),
  );
}
