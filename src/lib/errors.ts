/**
 * The one catalogue of errors. Every failure the API reports is an `AppError` whose code is a key of
 * `ERROR_CODES`; the HTTP layer is the only place that turns one into a response. Each entry carries
 * the text of its reference page (`/docs/errors/{code}`), so the catalogue and the docs cannot drift.
 */

export const ERROR_TYPES = {
  invalid_request_error: 'The request was malformed or failed validation. Fix it before trying again.',
  authentication_error: 'The credential was missing, unknown, expired or revoked.',
  permission_error: 'The credential is valid but may not do this.',
  not_found_error: 'The addressed resource or route does not exist for this credential.',
  conflict_error: "The request conflicts with the resource's current state.",
  idempotency_error: 'The Idempotency-Key header was missing, malformed, reused or still in flight.',
  rate_limit_error: 'Too many requests; wait for the time in Retry-After.',
  provider_error: 'The upstream provider refused or failed the operation.',
  api_error: 'The service failed or is temporarily unavailable.',
} as const;

export type ErrorType = keyof typeof ERROR_TYPES;

interface ErrorDefinition {
  readonly type: ErrorType;
  readonly status: number;
  /** Whether sending the same request again, later, can succeed without changing it. */
  readonly retryable: boolean;
  readonly title: string;
  readonly description: string;
  readonly resolution: string;
}

function define<const T extends Record<string, ErrorDefinition>>(codes: T): T {
  return codes;
}

export const ERROR_CODES = define({
  // invalid_request_error
  validation_failed: {
    type: 'invalid_request_error',
    status: 400,
    retryable: false,
    title: 'Validation failed',
    description:
      'A body field, query parameter or header failed validation, or the body holds a field the endpoint does not accept. `param` is the JSON pointer of the first offending field (`/query/<name>` for query parameters, `/header/<name>` for headers) and `details` lists up to ten failures.',
    resolution: 'Correct the field named by `param` (and those in `details`) and send the request again.',
  },
  malformed_json: {
    type: 'invalid_request_error',
    status: 400,
    retryable: false,
    title: 'Malformed JSON',
    description: 'The request body could not be parsed as JSON.',
    resolution: 'Send a syntactically valid JSON document.',
  },
  unsupported_content_type: {
    type: 'invalid_request_error',
    status: 415,
    retryable: false,
    title: 'Unsupported content type',
    description:
      'The endpoint does not accept the request body in the Content-Type sent. /v1 bodies are `application/json`; media uploads are `multipart/form-data`.',
    resolution: 'Send the body with the content type the endpoint documents.',
  },
  body_too_large: {
    type: 'invalid_request_error',
    status: 413,
    retryable: false,
    title: 'Body too large',
    description: 'The request body is larger than the endpoint accepts (1 MiB for JSON bodies).',
    resolution: 'Send a smaller body; upload large files through the media endpoint.',
  },
  method_not_allowed: {
    type: 'invalid_request_error',
    status: 405,
    retryable: false,
    title: 'Method not allowed',
    description: 'The path exists but does not accept this HTTP method. The `Allow` header lists the methods it accepts.',
    resolution: 'Use one of the methods in the `Allow` header.',
  },
  url_not_allowed: {
    type: 'invalid_request_error',
    status: 400,
    retryable: false,
    title: 'URL not allowed',
    description:
      'The URL is not an allowed destination: it is not https, carries credentials, or resolves to a loopback, private, link-local, multicast or metadata address.',
    resolution: 'Use a public https URL.',
  },
  media_type_unsupported: {
    type: 'invalid_request_error',
    status: 415,
    retryable: false,
    title: 'Media type unsupported',
    description: 'The uploaded file has a MIME type the messaging channel does not accept for that kind of media.',
    resolution: 'Convert the file to one of the supported MIME types listed in the media guide.',
  },
  media_too_large: {
    type: 'invalid_request_error',
    status: 413,
    retryable: false,
    title: 'Media too large',
    description: "The uploaded file is larger than the channel's limit for its kind of media.",
    resolution: 'Compress or split the file below the limit for its kind.',
  },
  template_parameters_mismatch: {
    type: 'invalid_request_error',
    status: 400,
    retryable: false,
    title: 'Template parameters mismatch',
    description: "The parameters sent do not match the template's placeholders (count, names or types).",
    resolution: "Send exactly the parameters the template's components declare.",
  },
  reaction_target_invalid: {
    type: 'invalid_request_error',
    status: 400,
    retryable: false,
    title: 'Reaction target invalid',
    description: 'A reaction or reply must point at a message of the same conversation.',
    resolution: 'Use the id of a message in the conversation you are writing to.',
  },
  operation_unsupported: {
    type: 'invalid_request_error',
    status: 400,
    retryable: false,
    title: 'Operation unsupported',
    description:
      'The operation is valid in general but not for this resource (for example a message type that a coexistence number cannot send through the API).',
    resolution: 'Check the capabilities of the connection or resource in the guide.',
  },

  // authentication_error
  credential_missing: {
    type: 'authentication_error',
    status: 401,
    retryable: false,
    title: 'Credential missing',
    description: 'The request has no `Authorization: Bearer <credential>` header.',
    resolution: 'Send an API key, OAuth access token or dashboard token in the Authorization header.',
  },
  credential_invalid: {
    type: 'authentication_error',
    status: 401,
    retryable: false,
    title: 'Credential invalid',
    description: 'The credential is malformed or unknown.',
    resolution: 'Check that the whole credential was copied, and that it belongs to this service.',
  },
  credential_expired: {
    type: 'authentication_error',
    status: 401,
    retryable: false,
    title: 'Credential expired',
    description: 'The credential was valid but has expired. Dashboard tokens live 15 minutes.',
    resolution: 'Obtain a new token (for a dashboard token, call `POST /auth/refresh`).',
  },
  credential_revoked: {
    type: 'authentication_error',
    status: 401,
    retryable: false,
    title: 'Credential revoked',
    description: 'The credential was revoked (or replaced by rotation) and is no longer accepted.',
    resolution: 'Use the replacement credential, or create a new one in the dashboard.',
  },
  login_failed: {
    type: 'authentication_error',
    status: 401,
    retryable: false,
    title: 'Login failed',
    description: 'The email and password do not match a member. The message never says which of the two was wrong.',
    resolution: 'Check the email and password.',
  },
  signature_invalid: {
    type: 'authentication_error',
    status: 401,
    retryable: false,
    title: 'Signature invalid',
    description: 'A signed request (such as a provider webhook) carried no signature or a signature that does not match its body.',
    resolution: 'Sign the exact raw body with the shared secret.',
  },

  // permission_error
  scope_missing: {
    type: 'permission_error',
    status: 403,
    retryable: false,
    title: 'Scope missing',
    description: 'The credential lacks the scope the endpoint requires. The error names the scope in `required_scope`.',
    resolution: 'Use a credential that holds the scope, or create a key with it.',
  },
  test_key_on_live_connection: {
    type: 'permission_error',
    status: 403,
    retryable: false,
    title: 'Test key on a live connection',
    description: 'A test-mode key (`csk_test_…`, `cok_test_…`) was used against a live connection. Test keys reach only connections marked as test.',
    resolution: 'Use a live key, or a test connection.',
  },
  role_insufficient: {
    type: 'permission_error',
    status: 403,
    retryable: false,
    title: 'Role insufficient',
    description: "The member's role does not allow this operation. The error names the roles that may in `allowed_roles`.",
    resolution: 'Ask an owner or admin to do it, or to change your role.',
  },
  credential_kind_not_allowed: {
    type: 'permission_error',
    status: 403,
    retryable: false,
    title: 'Credential kind not allowed',
    description:
      'This endpoint does not accept this kind of credential (for example, the runtime surface takes connection keys only, and key management takes dashboard tokens). The error lists the accepted kinds in `allowed_credentials`.',
    resolution: 'Call the endpoint with one of the accepted credential kinds.',
  },
  plan_limit_reached: {
    type: 'permission_error',
    status: 402,
    retryable: false,
    title: 'Plan limit reached',
    description:
      "The organization's plan does not allow more of this usage this month (on `free`, live messages sent past 1,000). The error names the `meter`, the `plan` and its monthly `limit`.",
    resolution: 'Move to a larger plan in billing, or wait for the next calendar month (UTC). Test numbers are never refused.',
  },

  // not_found_error
  resource_not_found: {
    type: 'not_found_error',
    status: 404,
    retryable: false,
    title: 'Resource not found',
    description:
      "No resource with this id exists for this credential. Another organization's ids, and a connection key's view of another connection, answer the same way.",
    resolution: 'Check the id, and that the credential belongs to the right organization and connection.',
  },
  route_not_found: {
    type: 'not_found_error',
    status: 404,
    retryable: false,
    title: 'Route not found',
    description: 'No endpoint exists at this path.',
    resolution: 'Check the path against the API reference (`/v1/openapi.json`).',
  },
  media_expired: {
    type: 'not_found_error',
    status: 410,
    retryable: false,
    title: 'Media expired',
    description: 'The media existed but is past its retention and its content is gone.',
    resolution: 'Upload the file again.',
  },

  // conflict_error
  resource_exists: {
    type: 'conflict_error',
    status: 409,
    retryable: false,
    title: 'Resource exists',
    description: 'A resource with the same unique value (an email, a phone number, a name) already exists. `param` names the field.',
    resolution: 'Use the existing resource, or choose another value.',
  },
  invalid_state: {
    type: 'conflict_error',
    status: 409,
    retryable: false,
    title: 'Invalid state',
    description: "The operation is not possible in the resource's current state (for example revoking a key that is already revoked).",
    resolution: "Read the resource's current state before acting.",
  },
  window_closed: {
    type: 'conflict_error',
    status: 409,
    retryable: false,
    title: 'Customer service window closed',
    description:
      "The contact's 24-hour customer service window is closed, so only templates may be sent. `templates` lists the approved templates that could be used.",
    resolution: 'Send an approved template instead.',
  },
  conversation_locked: {
    type: 'conflict_error',
    status: 409,
    retryable: true,
    title: 'Conversation locked',
    description: 'Another member holds the lock on this conversation. The error names the holder and the expiry in `lock`.',
    resolution: 'Ask the holder for a handover, or wait for the lock to expire.',
  },
  template_not_approved: {
    type: 'conflict_error',
    status: 409,
    retryable: false,
    title: 'Template not approved',
    description: 'The template exists but is not approved for sending (pending, rejected, paused or disabled).',
    resolution: 'Use an approved template, or wait for approval.',
  },
  contact_opted_out: {
    type: 'conflict_error',
    status: 409,
    retryable: false,
    title: 'Contact opted out',
    description: 'The contact has opted out of this kind of message (for example marketing templates).',
    resolution: 'Do not send marketing to this contact unless they opt in again.',
  },
  connection_needs_reauth: {
    type: 'conflict_error',
    status: 409,
    retryable: false,
    title: 'Connection needs re-authorisation',
    description: "The provider no longer accepts the connection's access; the owner must re-authorise it.",
    resolution: 'Call `POST /v1/connections/{id}/reauthorise` with a new code.',
  },
  connection_inactive: {
    type: 'conflict_error',
    status: 409,
    retryable: false,
    title: 'Connection inactive',
    description: 'The connection is disconnected or still connecting, so it cannot send.',
    resolution: 'Finish connecting the number, or connect it again.',
  },
  owner_immutable: {
    type: 'conflict_error',
    status: 409,
    retryable: false,
    title: 'Owner cannot be changed this way',
    description: "The organization's owner cannot be removed or have their role changed directly; ownership moves only by transfer.",
    resolution: 'Transfer ownership first with `POST /v1/organization/transfer-ownership`.',
  },
  invite_expired: {
    type: 'conflict_error',
    status: 410,
    retryable: false,
    title: 'Invite expired',
    description: 'The invite has expired, was revoked, or was already accepted.',
    resolution: 'Ask an owner or admin for a new invite.',
  },
  resource_limit_reached: {
    type: 'conflict_error',
    status: 409,
    retryable: false,
    title: 'Resource limit reached',
    description:
      'The organization already has as many of this kind of resource as the service allows on every plan (for example 500 active schedules, or 100 enabled automations). Limits that depend on the subscription are `plan_limit_reached` instead.',
    resolution: 'Delete, disable or pause resources of this kind that are no longer needed, then send the request again.',
  },

  // idempotency_error
  idempotency_key_required: {
    type: 'idempotency_error',
    status: 400,
    retryable: false,
    title: 'Idempotency key required',
    description: 'Send endpoints refuse requests without an `Idempotency-Key` header, so a retry can never send twice.',
    resolution: 'Send a unique `Idempotency-Key` (for example a UUID) with each distinct request, and the same key on its retries.',
  },
  idempotency_key_reuse: {
    type: 'idempotency_error',
    status: 422,
    retryable: false,
    title: 'Idempotency key reused',
    description: 'The `Idempotency-Key` was already used with a different request (method, path or body). The error names the key in `idempotency_key`.',
    resolution: 'Use a new key for a new request.',
  },
  idempotency_key_in_flight: {
    type: 'idempotency_error',
    status: 409,
    retryable: true,
    title: 'Idempotency key in flight',
    description: 'A request with this `Idempotency-Key` is still being processed. The response carries `Retry-After: 1`.',
    resolution: 'Retry after a second; the replay will return the first request’s response.',
  },
  idempotency_key_invalid: {
    type: 'idempotency_error',
    status: 400,
    retryable: false,
    title: 'Idempotency key invalid',
    description: 'The `Idempotency-Key` header is empty or longer than 255 characters.',
    resolution: 'Send a key of 1 to 255 printable characters.',
  },

  // rate_limit_error
  rate_limited: {
    type: 'rate_limit_error',
    status: 429,
    retryable: true,
    title: 'Rate limited',
    description:
      "The credential's (or, unauthenticated, the source address's) request budget is spent. `Retry-After` says when to try again; the `X-RateLimit-*` headers describe the bucket.",
    resolution: 'Wait for `Retry-After` seconds, and spread requests out.',
  },
  provider_throttled: {
    type: 'rate_limit_error',
    status: 429,
    retryable: true,
    title: 'Provider throttled',
    description: 'The upstream provider is throttling this connection or account. `Retry-After` is derived from its usage headers when it sends them.',
    resolution: 'Wait for `Retry-After` seconds.',
  },

  // provider_error
  provider_rejected: {
    type: 'provider_error',
    status: 502,
    retryable: false,
    title: 'Provider rejected the request',
    description: 'The upstream provider refused the operation. Its own error is kept under `provider` (code, subcode, message, trace id).',
    resolution: "Read `provider.code` and the provider's documentation for that code.",
  },
  provider_unavailable: {
    type: 'provider_error',
    status: 502,
    retryable: true,
    title: 'Provider unavailable',
    description: 'The upstream provider failed (a 5xx, a closed connection, or an answer that was not JSON).',
    resolution: 'Retry later with backoff.',
  },
  provider_timeout: {
    type: 'provider_error',
    status: 504,
    retryable: true,
    title: 'Provider timed out',
    description: 'The upstream provider did not answer in time.',
    resolution: 'Retry later with backoff; send endpoints are safe to retry with the same Idempotency-Key.',
  },

  // api_error
  internal_error: {
    type: 'api_error',
    status: 500,
    retryable: true,
    title: 'Internal error',
    description: 'The service failed unexpectedly. Nothing about the failure is shown; quote `request_id` to support.',
    resolution: 'Retry with backoff; if it persists, contact support with the request id.',
  },
  service_unavailable: {
    type: 'api_error',
    status: 503,
    retryable: true,
    title: 'Service unavailable',
    description: 'The service is starting, draining for a restart, or cannot reach its store. `Retry-After` says when to try again.',
    resolution: 'Wait for `Retry-After` seconds and retry.',
  },
});

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetail {
  param: string;
  code: string;
  message: string;
}

export interface AppErrorOptions {
  param?: string | null;
  details?: ErrorDetail[];
  /** Fields added to the error object beside the standard ones (`idempotency_key`, `provider`, ...). */
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly param: string | null;
  readonly details: ErrorDetail[];
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;
  /**
   * Fastify's name for the status. Error handlers other than ours read it: the sandbox's scopes
   * answer an error with a 4xx `statusCode` as the caller's, in their own envelopes, so that a
   * request our hooks refuse on their routes (a NUL character) is not their 500. A field, not a
   * getter: Fastify assigns it on validation errors, and assigning to a getter throws.
   */
  readonly statusCode: number;

  constructor(code: ErrorCode, message?: string, options: AppErrorOptions = {}) {
    super(message ?? ERROR_CODES[code].description, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.param = options.param ?? null;
    this.details = options.details ?? [];
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
    this.statusCode = ERROR_CODES[code].status;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  get type(): ErrorType {
    return ERROR_CODES[this.code].type;
  }

  get retryable(): boolean {
    return ERROR_CODES[this.code].retryable;
  }
}

export function notFound(what: string): AppError {
  return new AppError('resource_not_found', `No such ${what}.`);
}

/** A `validation_failed` for a rule a schema cannot express (exclusive parameters, cross-field rules). */
export function invalidParam(param: string, message: string, code = 'invalid_value'): AppError {
  return new AppError('validation_failed', `${param} ${message}.`, { param, details: [{ param, code, message }] });
}

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
