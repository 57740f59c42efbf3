/**
 * The provider port: what the domain needs from a messaging provider, in the domain's words. The
 * cloud adapter (`whatsapp/`) is the only code that knows the provider's URLs, payloads and error
 * codes; everything above this port sees `ProviderError` categories and plain ids.
 */
import { AppError } from '../lib/errors.ts';

/** The per-connection credentials, passed on every call so one adapter serves every connection. */
export interface ProviderCredentials {
  accessToken: string;
  phoneNumberId: string;
  wabaId: string;
}

export type MediaKind = 'image' | 'video' | 'audio' | 'document' | 'sticker';

/** Media is either already uploaded to the provider (`id`) or fetched by it from a URL (`link`). */
export type MediaSource = { id: string } | { link: string };

export type MessageContent =
  | { type: 'text'; text: string; previewUrl?: boolean }
  | { type: MediaKind; media: MediaSource; caption?: string; filename?: string }
  | { type: 'location'; latitude: number; longitude: number; name?: string; address?: string }
  /** An empty `emoji` removes an earlier reaction. */
  | { type: 'reaction'; messageId: string; emoji: string }
  /** Positional text parameters only; richer template parameters arrive with the templates issue. */
  | { type: 'template'; name: string; language: string; headerParameters?: string[]; bodyParameters?: string[] };

export type OutboundMessage = MessageContent & {
  /** The user's phone number (E.164, `+` optional) or WhatsApp id. */
  to: string;
  /** The provider message id this message quotes. */
  replyTo?: string;
  /** Echoed back by the provider on every status of this message (≤512 chars). */
  callbackData?: string;
};

export interface SentMessage {
  providerMessageId: string;
  /** The user's WhatsApp id as the provider resolved it; may differ from the number sent to. */
  recipientWaId: string;
}

export interface PhoneNumberInfo {
  phoneNumberId: string;
  displayPhoneNumber: string;
  verifiedName: string;
  qualityRating: string | undefined;
  nameStatus: string | undefined;
  status: string | undefined;
  messagingLimitTier: string | undefined;
  throughputLevel: string | undefined;
}

export interface ExchangedCode {
  accessToken: string;
  /** Undefined when the provider did not reveal it; the browser's signup session info has it too. */
  wabaId: string | undefined;
  phoneNumberId: string | undefined;
}

export interface Provider {
  sendMessage(credentials: ProviderCredentials, message: OutboundMessage): Promise<SentMessage>;
  /** Marks an inbound message (and the ones before it) as read. */
  markRead(credentials: ProviderCredentials, providerMessageId: string): Promise<void>;
  /** Shows the typing indicator in reply to an inbound message; it also marks that message read. */
  sendTyping(credentials: ProviderCredentials, providerMessageId: string): Promise<void>;
  getPhoneNumber(credentials: ProviderCredentials): Promise<PhoneNumberInfo>;
  /** Turns a signup code into a business token and, where the provider tells, the account ids. */
  exchangeCode(code: string): Promise<ExchangedCode>;
  /** Subscribes our app to the account's webhooks. */
  subscribeApp(credentials: Pick<ProviderCredentials, 'accessToken' | 'wabaId'>): Promise<void>;
}

export const PROVIDER_ERROR_CATEGORIES = ['auth', 'throttled', 'rejected', 'unavailable', 'timeout'] as const;
/**
 * - `auth`: the provider no longer accepts the connection's token; the owner must re-authorise.
 * - `throttled`: a provider rate limit; retry after `retryAfterSeconds`.
 * - `rejected`: the provider refused this request; sending it again unchanged will not help
 *   (unless `retryable` says otherwise).
 * - `unavailable`: the provider failed (5xx, closed socket, an answer that was not JSON).
 * - `timeout`: no answer in time; the request may or may not have taken effect.
 */
export type ProviderErrorCategory = (typeof PROVIDER_ERROR_CATEGORIES)[number];

export interface ProviderErrorInit {
  category: ProviderErrorCategory;
  message: string;
  retryable: boolean;
  code?: number | undefined;
  subcode?: number | undefined;
  traceId?: string | undefined;
  httpStatus?: number | undefined;
  retryAfterSeconds?: number | undefined;
  cause?: unknown;
}

export class ProviderError extends Error {
  readonly category: ProviderErrorCategory;
  /** The provider's own error code, when it answered with one. */
  readonly code: number | undefined;
  readonly subcode: number | undefined;
  readonly traceId: string | undefined;
  /** Undefined when no HTTP answer arrived (socket closed, time-out). */
  readonly httpStatus: number | undefined;
  readonly retryable: boolean;
  /** Whole seconds to wait before retrying; undefined leaves the delay to the caller's backoff. */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: ProviderErrorInit) {
    super(init.message, { cause: init.cause });
    this.name = 'ProviderError';
    this.category = init.category;
    this.code = init.code;
    this.subcode = init.subcode;
    this.traceId = init.traceId;
    this.httpStatus = init.httpStatus;
    this.retryable = init.retryable;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

export function isProviderError(error: unknown): error is ProviderError {
  return error instanceof ProviderError;
}

/**
 * The one translation from a provider failure to the API's error catalogue. The provider's own
 * error travels under `provider` so a caller can look its code up; the message is the provider's,
 * which carries no secrets (tokens are never echoed by the provider).
 */
export function providerErrorToAppError(error: ProviderError): AppError {
  const provider = {
    code: error.code ?? null,
    subcode: error.subcode ?? null,
    message: error.message,
    trace_id: error.traceId ?? null,
  };
  const headers: Record<string, string> =
    error.retryAfterSeconds === undefined ? {} : { 'retry-after': String(Math.max(1, Math.ceil(error.retryAfterSeconds))) };
  switch (error.category) {
    case 'auth':
      return new AppError('connection_needs_reauth', undefined, { extra: { provider }, cause: error });
    case 'throttled':
      // provider_throttled promises a Retry-After; without a hint from the provider, one second is the
      // smallest honest wait (the per-second throughput budget).
      return new AppError('provider_throttled', undefined, { extra: { provider }, headers: { 'retry-after': headers['retry-after'] ?? '1' }, cause: error });
    case 'rejected':
      return new AppError('provider_rejected', error.message, { extra: { provider }, cause: error });
    case 'unavailable':
      return new AppError('provider_unavailable', undefined, { extra: { provider }, headers, cause: error });
    case 'timeout':
      return new AppError('provider_timeout', undefined, { cause: error });
  }
}
