/**
 * @messaging-service/client: the messaging service's /v1 API from TypeScript or JavaScript, over the
 * platform's `fetch` (docs/client.md). Webhook verification is at `@messaging-service/client/webhooks`.
 */
export { createClient, describeCredential, type Client, type ClientOptions, type CredentialKind } from './client.ts';
export {
  ApiConnectionError,
  ApiError,
  ApiTimeoutError,
  MessagingServiceError,
  UnexpectedResponseError,
  type ErrorBody,
  type ErrorCode,
  type ErrorDetail,
  type ErrorType,
} from './errors.ts';
export { Paginator } from './pagination.ts';
export type * from './types.ts';
export type { paths } from './generated/openapi.ts';
