/**
 * The provider port: what the domain needs from a messaging provider, in the domain's words. The
 * cloud adapter (`whatsapp/`) is the only code that knows the provider's URLs, payloads and error
 * codes; everything above this port sees `ProviderError` categories and plain ids.
 */
import type { Readable } from 'node:stream';
import { AppError } from '../lib/errors.ts';

/** The per-connection credentials, passed on every call so one adapter serves every connection. */
export interface ProviderCredentials {
  accessToken: string;
  phoneNumberId: string;
  wabaId: string;
  /** The number's throughput ceiling, which sends are paced to; unset, the provider's standard. */
  messagesPerSecond?: number;
}

export { MEDIA_KINDS, type MediaKind } from './provider.schemas.ts';
import type { MediaKind, TemplateCategory, TemplateStatus } from './provider.schemas.ts';

/** Media is either already uploaded to the provider (`id`) or fetched by it from a URL (`link`). */
export type MediaSource = { id: string } | { link: string };

/**
 * Template parameters, in the order the template's placeholders appear. `name` is set for templates
 * whose placeholders are named (`{{first_name}}`) instead of numbered.
 */
export type TemplateTextParameter = { type: 'text'; text: string; name?: string };
/**
 * Content that carries media is generic over how the media is named: the port sends `MediaSource`
 * (the provider's id or a link); the domain keeps its own reference until the moment of sending.
 */
export type TemplateHeaderParameter<M = MediaSource> =
  | TemplateTextParameter
  | { type: 'image' | 'video' | 'document'; media: M; filename?: string }
  | { type: 'location'; latitude: number; longitude: number; name?: string; address?: string };
export type TemplateBodyParameter =
  | TemplateTextParameter
  /** `amount1000` is the amount times 1000 (12.34 EUR → 12340); `fallback` is shown where formatting fails. */
  | { type: 'currency'; fallback: string; currencyCode: string; amount1000: number; name?: string }
  | { type: 'date_time'; fallback: string; name?: string };
/** `index` is the button's position (0-based) among the template's buttons. */
export type TemplateButtonParameter =
  | { type: 'quick_reply'; index: number; payload: string }
  | { type: 'url'; index: number; urlSuffix: string }
  | { type: 'copy_code'; index: number; code: string };

export type InteractiveHeader<M = MediaSource> = { type: 'text'; text: string } | { type: 'image' | 'video' | 'document'; media: M; filename?: string };

export type InteractiveContent<M = MediaSource> =
  /** Up to three reply buttons; the user's tap comes back as an inbound `button_reply` with the button's `id`. */
  | { kind: 'buttons'; body: string; header?: InteractiveHeader<M>; footer?: string; buttons: { id: string; title: string }[] }
  /** A menu opened by `buttonLabel`: up to ten rows in total across the sections. */
  | {
      kind: 'list';
      body: string;
      header?: { type: 'text'; text: string };
      footer?: string;
      buttonLabel: string;
      sections: { title?: string; rows: { id: string; title: string; description?: string }[] }[];
    };

export type ContactPhoneType = 'cell' | 'main' | 'iphone' | 'home' | 'work';
export type ContactLabel = 'home' | 'work';

/** A contact card (vCard-like) sent in a `contacts` message. */
export interface ContactCard {
  name: { formattedName: string; firstName?: string; lastName?: string; middleName?: string; prefix?: string; suffix?: string };
  /** `waId` makes the phone open a WhatsApp chat with that user. */
  phones?: { phone: string; type?: ContactPhoneType; waId?: string }[];
  emails?: { email: string; type?: ContactLabel }[];
  addresses?: { street?: string; city?: string; state?: string; zip?: string; country?: string; countryCode?: string; type?: ContactLabel }[];
  org?: { company?: string; department?: string; title?: string };
  urls?: { url: string; type?: ContactLabel }[];
  /** `YYYY-MM-DD`. */
  birthday?: string;
}

export type MessageContent<M = MediaSource> =
  | { type: 'text'; text: string; previewUrl?: boolean }
  | { type: MediaKind; media: M; caption?: string; filename?: string }
  | { type: 'location'; latitude: number; longitude: number; name?: string; address?: string }
  /** An empty `emoji` removes an earlier reaction. */
  | { type: 'reaction'; messageId: string; emoji: string }
  | { type: 'contacts'; contacts: ContactCard[] }
  | { type: 'interactive'; interactive: InteractiveContent<M> }
  | {
      type: 'template';
      name: string;
      language: string;
      headerParameter?: TemplateHeaderParameter<M>;
      bodyParameters?: TemplateBodyParameter[];
      buttonParameters?: TemplateButtonParameter[];
    };

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
  /** `STANDARD` (80 messages/s) or `HIGH` (1,000/s); coexistence numbers are held at 20/s whatever this says. */
  throughputLevel: string | undefined;
  /**
   * Coexistence: the number is also in use in the WhatsApp Business app. Such a number must not be
   * registered, is limited to 20 messages/s, and can import its app history (`requestHistorySync`).
   */
  isOnBizApp: boolean;
  /** `CLOUD_API`, `ON_PREMISE` or `NOT_APPLICABLE`, as the provider says. */
  platformType: string | undefined;
}

export interface ExchangedCode {
  accessToken: string;
  /** Undefined when the provider did not reveal it; the browser's signup session info has it too. */
  wabaId: string | undefined;
  /** Set only when the account has exactly one number; otherwise pick one of `phoneNumberIds`. */
  phoneNumberId: string | undefined;
  /** Every number of the account, as far as the provider told (empty when the look-up failed). */
  phoneNumberIds: string[];
}

export interface MediaUpload {
  bytes: Uint8Array;
  /** The media's MIME type (`image/jpeg`, `application/pdf`, ...); the provider checks it against the bytes. */
  mimeType: string;
  filename?: string;
}

export interface MediaInfo {
  providerMediaId: string;
  /** Short-lived (about five minutes) and readable only with the connection's token. */
  url: string;
  mimeType: string;
  /** Hex SHA-256 of the bytes, when the provider gave one. */
  sha256: string | undefined;
  /** Bytes, when the provider gave the size. */
  fileSize: number | undefined;
}

export interface DownloadedMedia {
  mimeType: string;
  /** Bytes, when known before reading (`Content-Length` or the provider's `file_size`). */
  size: number | undefined;
  sha256: string | undefined;
  /**
   * The bytes, streamed. The caller must read it to the end or destroy it: it holds a connection.
   * It fails with a `ProviderError` if the media grows past `maxBytes`, stalls, or does not match
   * the provider's SHA-256.
   */
  stream: Readable;
}

export { TEMPLATE_CATEGORIES, TEMPLATE_STATUSES, type TemplateCategory, type TemplateStatus } from './provider.schemas.ts';

export type TemplateButton =
  | { type: 'quick_reply'; text: string }
  /** A `{{1}}` at the end of `url` is filled by the send's `url` button parameter; `example` shows a full URL. */
  | { type: 'url'; text: string; url: string; example?: string }
  | { type: 'phone_number'; text: string; phoneNumber: string }
  | { type: 'copy_code'; example: string }
  | { type: 'otp'; otpType: string; text?: string }
  | { type: 'flow'; text: string; flowId?: string; flowAction?: string; navigateScreen?: string };

export type TemplateComponent =
  /** `example`: a sample value for the text's placeholder, or for media a sample handle. */
  | { type: 'header'; format: 'text'; text: string; example?: string }
  | { type: 'header'; format: 'image' | 'video' | 'document'; example?: string }
  | { type: 'header'; format: 'location' }
  /** `examples`: one sample per placeholder, in order (numbered) or by name (named). */
  | { type: 'body'; text: string; examples?: string[] | Record<string, string> }
  | { type: 'footer'; text: string }
  | { type: 'buttons'; buttons: TemplateButton[] }
  /** A component this adapter does not model (carousel, limited-time offer, ...), kept as the provider gave it. */
  | { type: 'other'; providerType: string; definition: Record<string, unknown> };

export interface Template {
  providerTemplateId: string;
  name: string;
  /** `en_US`, `pt_BR`, ...: one template name exists once per language. */
  language: string;
  status: TemplateStatus;
  /** Undefined for a category the adapter does not know. */
  category: TemplateCategory | undefined;
  parameterFormat: 'positional' | 'named';
  components: TemplateComponent[];
  /** `high`, `medium`, `low` or `unknown`, when the provider rated the template. */
  quality: string | undefined;
  /** Why the provider rejected it, when it did. */
  rejectedReason: string | undefined;
}

export interface TemplateDraft {
  /** Lower-case letters, digits and underscores. */
  name: string;
  language: string;
  category: TemplateCategory;
  components: TemplateComponent[];
  /** Default `positional` (`{{1}}`); `named` placeholders look like `{{first_name}}`. */
  parameterFormat?: 'positional' | 'named';
}

export interface CreatedTemplate {
  providerTemplateId: string;
  status: TemplateStatus;
  /** The provider may file the template under another category than the one asked for. */
  category: TemplateCategory | undefined;
}

export type HistorySyncKind = 'history' | 'contacts';

/** How a send may be held back before it leaves. */
export interface SendOptions {
  /**
   * Aborts the waits before the request leaves (for a pacing slot, out a throttle) with its reason;
   * never a request already on its way, which may have reached the provider.
   */
  waitSignal?: AbortSignal;
}

export interface Provider {
  sendMessage(credentials: ProviderCredentials, message: OutboundMessage, options?: SendOptions): Promise<SentMessage>;
  /** Marks an inbound message (and the ones before it) as read. */
  markRead(credentials: ProviderCredentials, providerMessageId: string): Promise<void>;
  /** Shows the typing indicator in reply to an inbound message; it also marks that message read. */
  sendTyping(credentials: ProviderCredentials, providerMessageId: string): Promise<void>;
  getPhoneNumber(credentials: ProviderCredentials): Promise<PhoneNumberInfo>;
  /** Turns a signup code into a business token and, where the provider tells, the account ids. */
  exchangeCode(code: string): Promise<ExchangedCode>;
  /** Subscribes our app to the account's webhooks. */
  subscribeApp(credentials: Pick<ProviderCredentials, 'accessToken' | 'wabaId'>): Promise<void>;
  /** Stops the account's webhooks to our app (disconnecting). */
  unsubscribeApp(credentials: Pick<ProviderCredentials, 'accessToken' | 'wabaId'>): Promise<void>;
  /**
   * Registers the number for the Cloud API with a six-digit two-step-verification PIN. Not for
   * coexistence numbers (`isOnBizApp`), which are registered already. The provider allows about ten
   * attempts per number in 72 hours.
   */
  registerNumber(credentials: ProviderCredentials, pin: string): Promise<void>;
  /**
   * Coexistence: asks the provider to import the business app's chat history (`history`) or its
   * contacts (`contacts`). Once each, within 24 hours of onboarding; the results arrive as webhooks.
   */
  requestHistorySync(credentials: ProviderCredentials, kind: HistorySyncKind): Promise<{ requestId: string | undefined }>;

  uploadMedia(credentials: ProviderCredentials, media: MediaUpload): Promise<{ providerMediaId: string }>;
  getMedia(credentials: ProviderCredentials, providerMediaId: string): Promise<MediaInfo>;
  /** Looks the media up, then streams its bytes; `maxBytes` defaults to 100 MiB. */
  downloadMedia(credentials: ProviderCredentials, providerMediaId: string, options?: { maxBytes?: number }): Promise<DownloadedMedia>;
  deleteMedia(credentials: ProviderCredentials, providerMediaId: string): Promise<void>;

  /** Every template of the account, all pages read. */
  listTemplates(credentials: Pick<ProviderCredentials, 'accessToken' | 'wabaId'>): Promise<Template[]>;
  /** Submits a template for review; it is usually `pending` first. */
  createTemplate(credentials: Pick<ProviderCredentials, 'accessToken' | 'wabaId'>, draft: TemplateDraft): Promise<CreatedTemplate>;
  /** Without `providerTemplateId`, deletes the template in every language. */
  deleteTemplate(credentials: Pick<ProviderCredentials, 'accessToken' | 'wabaId'>, template: { name: string; providerTemplateId?: string }): Promise<void>;
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
