import type { AppError } from '../lib/errors.ts';
import { ERROR_CODES } from '../lib/errors.ts';

/** The body of every error response: `{ "error": { type, code, message, param, details, ... } }`. */
export function errorBody(error: AppError, requestId: string, publicBaseUrl: string): { error: Record<string, unknown> } {
  return {
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      param: error.param,
      details: error.details,
      retryable: ERROR_CODES[error.code].retryable,
      ...error.extra,
      doc_url: `${publicBaseUrl}/docs/errors/${error.code}`,
      request_id: requestId,
    },
  };
}
