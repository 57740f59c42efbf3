import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { bodyTooLargeMessage, discardRefusedBody, isBodyTooLarge } from './body-size.ts';

/**
 * The HTTP conventions of the sandbox's own APIs (the control API, and any sandbox path that is
 * neither Graph nor control): JSON bodies only, and every failure in one small envelope
 * `{error: {code, message, details?}}`, whatever the host application answers elsewhere.
 */

export class ControlError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown;

  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export function notFound(message: string): ControlError {
  return new ControlError(404, 'not_found', message);
}

export function invalid(message: string, details?: unknown): ControlError {
  return new ControlError(400, 'validation_failed', message, details);
}

/** The body, checked against its schema; a failure lists every offending field. */
export function check<T extends TSchema>(schema: T, body: unknown): Static<T> {
  if (Value.Check(schema, body)) return body;
  const details = Value.Errors(schema, body).map((error) => ({ param: error.instancePath || '/', message: error.message }));
  throw invalid('The request body is not valid for this control endpoint.', details);
}

function toControlError(error: FastifyError | ControlError, request: FastifyRequest): ControlError {
  if (error instanceof ControlError) return error;
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return new ControlError(415, 'unsupported_content_type', 'Control endpoints take JSON bodies (Content-Type: application/json).');
  if (isBodyTooLarge(error)) return new ControlError(413, 'body_too_large', bodyTooLargeMessage(request));
  if ((error.statusCode ?? 500) < 500) return invalid(error.message);
  request.log.error({ err: error }, 'sandbox control handler failed');
  return new ControlError(500, 'internal_error', 'The sandbox failed to handle this control request.');
}

export function sendControlError(reply: FastifyReply, error: ControlError): FastifyReply {
  const body = { error: { code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) } };
  return reply.status(error.status).type('application/json; charset=utf-8').send(body);
}

/** Installs the JSON parser, the error envelope and the not-found answer on a sandbox scope. */
export function installControlConventions(app: FastifyInstance, notFoundHint: string): void {
  // The host's parsers would answer in its own words; inside this scope only these apply.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body: string, done) => {
    if (body.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body));
    } catch {
      done(new ControlError(400, 'malformed_json', 'The request body is not valid JSON.'), undefined);
    }
  });

  app.setErrorHandler(async (error: FastifyError | ControlError, request: FastifyRequest, reply: FastifyReply) => {
    if (isBodyTooLarge(error)) await discardRefusedBody(request);
    return sendControlError(reply, toControlError(error, request));
  });

  app.setNotFoundHandler((request, reply) =>
    sendControlError(reply, notFound(`No sandbox endpoint ${request.method} ${request.url.split('?')[0] ?? ''}. ${notFoundHint}`)),
  );
}
