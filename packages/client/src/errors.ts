/**
 * What a call throws. `ApiError` is the service's own error envelope (docs/api-conventions.md#errors),
 * field for field; the others say that no such answer came: the connection failed, the call's time
 * ran out, or something that is not the API answered.
 */
import type { ERROR_CODES } from './generated/operations.ts';

export type ErrorCode = keyof typeof ERROR_CODES;
export type ErrorType = (typeof ERROR_CODES)[ErrorCode]['type'];

/** One entry of `details`: for `validation_failed`, each offending input. */
export interface ErrorDetail {
  param: string;
  code: string;
  message: string;
}

/** The `error` object of the envelope. Some codes add fields of their own (`required_scope`, `idempotency_key`, …). */
export interface ErrorBody {
  type: ErrorType;
  /** One of the catalogue's codes; a code added after this client was built is still passed through. */
  code: ErrorCode | (string & {});
  message: string;
  param: string | null;
  details: ErrorDetail[];
  retryable: boolean;
  doc_url: string;
  request_id: string;
  [field: string]: unknown;
}

/** The base of everything the client throws, so that one `catch` can tell its failures from yours. */
export class MessagingServiceError extends Error {
  override name = 'MessagingServiceError';
}

/** The service answered with its error envelope. Branch on `code`; `message` is for people. */
export class ApiError extends MessagingServiceError {
  override name = 'ApiError';
  readonly status: number;
  readonly type: ErrorType;
  readonly code: ErrorCode | (string & {});
  /** The JSON pointer of the first offending input (`/to`, `/query/limit`), or null. */
  readonly param: string | null;
  readonly details: ErrorDetail[];
  /** Whether sending the same request later, unchanged, can succeed. */
  readonly retryable: boolean;
  /** The code's reference page. */
  readonly docUrl: string;
  /** Quote it to support: the server's log lines carry it. */
  readonly requestId: string;
  /** The whole `error` object, extra fields included. */
  readonly body: ErrorBody;
  readonly headers: Headers;

  constructor(status: number, body: ErrorBody, headers: Headers) {
    super(body.message);
    this.status = status;
    this.type = body.type;
    this.code = body.code;
    this.param = body.param;
    this.details = body.details;
    this.retryable = body.retryable;
    this.docUrl = body.doc_url;
    this.requestId = body.request_id;
    this.body = body;
    this.headers = headers;
  }
}

/** No answer came: the connection was refused or dropped, on every attempt the call was allowed. */
export class ApiConnectionError extends MessagingServiceError {
  override name = 'ApiConnectionError';
}

/** The call's `timeout` passed before it had its answer (retries and waits included). */
export class ApiTimeoutError extends ApiConnectionError {
  override name = 'ApiTimeoutError';
}

/** Something answered that is not the API's JSON (a proxy's error page, a truncated body). */
export class UnexpectedResponseError extends MessagingServiceError {
  override name = 'UnexpectedResponseError';
  readonly status: number;
  readonly text: string;
  readonly requestId: string | null;

  constructor(status: number, text: string, headers: Headers) {
    super(`The server answered ${status} with a body that is not the API's JSON.`);
    this.status = status;
    this.text = text;
    this.requestId = headers.get('x-request-id');
  }
}

/** Whether `value` is the envelope's `error` object, checked field by field before an ApiError is built on it. */
export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const body = value as Record<string, unknown>;
  return typeof body.type === 'string' && typeof body.code === 'string' && typeof body.message === 'string' && typeof body.retryable === 'boolean';
}
