import { pooledRandomBytes } from '../../lib/crypto.ts';

/**
 * The provider's error codes the sandbox can produce, with the HTTP status and title the provider
 * uses for each (cloud-api-facts.md §8.3). A code missing here still works through `fail_next`: it
 * is answered with HTTP 400 and a generic title, as the provider does for most user errors.
 */
export const GRAPH_ERRORS: Readonly<Record<number, { status: number; title: string }>> = {
  0: { status: 401, title: 'AuthException' },
  1: { status: 400, title: 'API Unknown' },
  2: { status: 503, title: 'API Service' },
  3: { status: 500, title: 'API Method' },
  4: { status: 400, title: 'Application request limit reached' },
  10: { status: 403, title: 'Permission Denied' },
  33: { status: 400, title: 'Parameter value is not valid' },
  100: { status: 400, title: 'Invalid parameter' },
  190: { status: 401, title: 'Invalid OAuth access token - Cannot parse access token' },
  368: { status: 403, title: 'Temporarily blocked for policies violations' },
  80007: { status: 400, title: 'Rate limit issues' },
  130429: { status: 400, title: 'Rate limit hit' },
  130472: { status: 400, title: "User's number is part of an experiment" },
  130497: { status: 403, title: 'Business account is restricted from messaging users in this country' },
  131000: { status: 500, title: 'Something went wrong' },
  131005: { status: 403, title: 'Access denied' },
  131008: { status: 400, title: 'Required parameter is missing' },
  131009: { status: 400, title: 'Parameter value is not valid' },
  131016: { status: 500, title: 'Service unavailable' },
  131021: { status: 400, title: 'Recipient cannot be sender' },
  131026: { status: 400, title: 'Message undeliverable' },
  131031: { status: 403, title: 'Business Account locked' },
  131047: { status: 400, title: 'Re-engagement message' },
  131049: { status: 400, title: 'This message was not delivered to maintain healthy ecosystem engagement.' },
  131050: { status: 400, title: 'User stopped receiving marketing messages' },
  131051: { status: 400, title: 'Message type unknown' },
  131052: { status: 400, title: 'Media download error' },
  131053: { status: 400, title: 'Media upload error' },
  131056: { status: 400, title: '(Business Account, Consumer Account) pair rate limit hit' },
  131057: { status: 500, title: 'Account in maintenance mode' },
  132000: { status: 400, title: 'Number of parameters does not match the expected number of params' },
  132001: { status: 404, title: 'Template name does not exist in the translation' },
  132012: { status: 400, title: 'Parameter format does not match format in the created template' },
  132015: { status: 400, title: 'Template is Paused' },
  132016: { status: 400, title: 'Template is Disabled' },
  133004: { status: 503, title: 'Server Temporarily Unavailable' },
  133016: { status: 400, title: 'Account register deregister rate limit exceeded' },
  135000: { status: 400, title: 'Generic user error' },
  // Coexistence sync errors (§7.5); the titles are the sandbox's reading of the provider's table.
  2593107: { status: 400, title: 'Synchronization of this data has already been requested' },
  2593108: { status: 400, title: 'Synchronization can only be requested within 24 hours of onboarding' },
  2593109: { status: 400, title: 'The business declined to share its chat history' },
};

/** The provider's trace ids are opaque base64url strings of about this length. */
export function newTraceId(): string {
  return pooledRandomBytes(17).toString('base64url');
}

export function graphErrorTitle(code: number): string {
  return GRAPH_ERRORS[code]?.title ?? 'Error';
}

/** A failure answered in the Graph error envelope (§8.2), never in the service's own envelope. */
export class GraphError extends Error {
  readonly code: number;
  readonly status: number;
  readonly subcode: number | undefined;
  readonly details: string;

  constructor(code: number, details: string, options: { status?: number; subcode?: number; message?: string } = {}) {
    super(options.message ?? graphErrorTitle(code));
    this.code = code;
    this.status = options.status ?? GRAPH_ERRORS[code]?.status ?? 400;
    this.subcode = options.subcode;
    this.details = details;
  }
}

export interface GraphErrorBody {
  error: {
    message: string;
    type: 'OAuthException';
    code: number;
    error_subcode?: number;
    error_data: { messaging_product: 'whatsapp'; details: string };
    fbtrace_id: string;
  };
}

/** The Graph envelope; `traceId` is the request's `x-fb-trace-id`, so a log line can be matched to it. */
export function graphErrorBody(error: GraphError, traceId: string = newTraceId()): GraphErrorBody {
  return {
    error: {
      message: `(#${error.code}) ${error.message}`,
      type: 'OAuthException',
      code: error.code,
      ...(error.subcode === undefined ? {} : { error_subcode: error.subcode }),
      error_data: { messaging_product: 'whatsapp', details: error.details },
      fbtrace_id: traceId,
    },
  };
}

/** The provider's answer for an id that does not exist or that the token may not touch (§8.2). */
export function unknownObject(id: string, method: 'get' | 'post' | 'delete'): GraphError {
  return new GraphError(100, `Object with ID '${id}' is not reachable with this token.`, {
    subcode: 33,
    message:
      `Unsupported ${method} request. Object with ID '${id}' does not exist, cannot be loaded due to missing ` +
      'permissions, or does not support this operation. Please read the Graph API documentation at ' +
      'https://developers.facebook.com/docs/graph-api',
  });
}
