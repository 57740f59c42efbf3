import { createHmac } from 'node:crypto';
import { Agent, errors as undiciErrors, request } from 'undici';
import {
  ProviderError,
  type ExchangedCode,
  type MessageContent,
  type OutboundMessage,
  type PhoneNumberInfo,
  type Provider,
  type ProviderCredentials,
  type SentMessage,
} from '../provider.ts';
import { graphFailure } from './graph-errors.ts';

export interface CloudProviderOptions {
  /** `https://graph.facebook.com`, or the sandbox's `/graph` root. No trailing version. */
  baseUrl: string;
  /** Graph version such as `v24.0`. */
  version: string;
  /** The app id, sent as `client_id` when exchanging a signup code. */
  appId?: string;
  appSecret: string;
  /** Send `appsecret_proof` on token-bearing calls; needed only when the app requires it. */
  appSecretProof?: boolean;
  /** Per call: connecting, waiting for the headers and for the body each get at most this long. */
  timeoutMs?: number;
}

export type CloudProvider = Provider & {
  /** Closes the kept-alive connections. */
  close(): Promise<void>;
};

type Json = Record<string, unknown>;
type Query = Record<string, string>;

const DEFAULT_TIMEOUT_MS = 10_000;

function asObject(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

function asString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function unexpectedAnswer(what: string, httpStatus: number, traceId: string | undefined): ProviderError {
  return new ProviderError({ category: 'unavailable', retryable: true, message: `The provider's answer lacked ${what}.`, httpStatus, traceId });
}

/** A transport failure (no HTTP answer at all) as the port sees it. */
function transportFailure(error: unknown): ProviderError {
  const timedOut =
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError ||
    error instanceof undiciErrors.ConnectTimeoutError ||
    (error instanceof Error && error.name === 'TimeoutError');
  if (timedOut) return new ProviderError({ category: 'timeout', retryable: true, message: 'The provider did not answer in time.', cause: error });
  const reason = error instanceof Error ? error.message : String(error);
  return new ProviderError({ category: 'unavailable', retryable: true, message: `The provider could not be reached: ${reason}`, cause: error });
}

function messageContent(content: MessageContent): Json {
  switch (content.type) {
    case 'text':
      return { text: { body: content.text, ...(content.previewUrl === undefined ? {} : { preview_url: content.previewUrl }) } };
    case 'image':
    case 'video':
    case 'audio':
    case 'document':
    case 'sticker':
      return {
        [content.type]: {
          ...content.media,
          ...(content.caption === undefined ? {} : { caption: content.caption }),
          ...(content.filename === undefined ? {} : { filename: content.filename }),
        },
      };
    case 'location': {
      const { type: _type, ...location } = content;
      return { location };
    }
    case 'reaction':
      return { reaction: { message_id: content.messageId, emoji: content.emoji } };
    case 'template': {
      const text = (values: string[]) => values.map((value) => ({ type: 'text', text: value }));
      const components = [
        ...(content.headerParameters?.length ? [{ type: 'header', parameters: text(content.headerParameters) }] : []),
        ...(content.bodyParameters?.length ? [{ type: 'body', parameters: text(content.bodyParameters) }] : []),
      ];
      return { template: { name: content.name, language: { code: content.language }, ...(components.length === 0 ? {} : { components }) } };
    }
  }
}

/** The provider's Graph API (cloud-api-facts.md §1, §2, §7) behind the domain's provider port. */
export function createCloudProvider(options: CloudProviderOptions): CloudProvider {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const root = `${options.baseUrl.replace(/\/+$/, '')}/${options.version}`;
  // One pool for every connection's calls: the provider is one host, and TLS set-up dominates latency.
  const agent = new Agent({ keepAliveTimeout: 30_000, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });

  function proof(accessToken: string): Query {
    return options.appSecretProof ? { appsecret_proof: createHmac('sha256', options.appSecret).update(accessToken).digest('hex') } : {};
  }

  async function call(method: 'GET' | 'POST', path: string, init: { token?: string; query?: Query; body?: Json } = {}): Promise<{ status: number; body: Json; traceId: string | undefined }> {
    const url = new URL(`${root}/${path}`);
    const query = { ...init.query, ...(init.token === undefined ? {} : proof(init.token)) };
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';

    let response: Awaited<ReturnType<typeof request>>;
    let text: string;
    try {
      response = await request(url, {
        method,
        headers,
        dispatcher: agent,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        // The per-phase time-outs above could add up; this caps the whole call.
        signal: AbortSignal.timeout(timeoutMs * 2),
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      });
      text = await response.body.text();
    } catch (error) {
      throw transportFailure(error);
    }

    const traceHeader = response.headers['x-fb-trace-id'];
    const traceId = Array.isArray(traceHeader) ? traceHeader[0] : traceHeader;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      // A proxy's HTML error page or a truncated answer: the provider failed, whatever the status says.
      throw new ProviderError({
        category: 'unavailable',
        retryable: true,
        message: `The provider answered HTTP ${response.statusCode} with a body that is not JSON.`,
        httpStatus: response.statusCode,
        traceId,
        cause: error,
      });
    }
    if (response.statusCode < 200 || response.statusCode >= 300) throw graphFailure(response.statusCode, body, response.headers);
    const object = asObject(body);
    if (object === undefined) throw unexpectedAnswer('a JSON object', response.statusCode, traceId);
    return { status: response.statusCode, body: object, traceId };
  }

  async function readReceipt(credentials: ProviderCredentials, providerMessageId: string, typing: boolean): Promise<void> {
    const { body, status, traceId } = await call('POST', `${credentials.phoneNumberId}/messages`, {
      token: credentials.accessToken,
      body: {
        messaging_product: 'whatsapp',
        status: 'read',
        message_id: providerMessageId,
        ...(typing ? { typing_indicator: { type: 'text' } } : {}),
      },
    });
    if (body.success !== true) throw unexpectedAnswer('success: true', status, traceId);
  }

  /** The account behind a business token, the provider's way: debug_token, then its phone numbers (§7.4). */
  async function findAccount(accessToken: string): Promise<{ wabaId: string | undefined; phoneNumberId: string | undefined }> {
    const debug = await call('GET', 'debug_token', { token: accessToken, query: { input_token: accessToken } });
    const scopes = asObject(debug.body.data)?.granular_scopes;
    const management = Array.isArray(scopes)
      ? scopes.map(asObject).find((scope) => scope?.scope === 'whatsapp_business_management') ?? asObject(scopes[0])
      : undefined;
    const targets = management?.target_ids;
    const wabaId = Array.isArray(targets) ? asString(targets[0]) : undefined;
    if (wabaId === undefined) return { wabaId: undefined, phoneNumberId: undefined };
    const numbers = await call('GET', `${wabaId}/phone_numbers`, { token: accessToken, query: { fields: 'id' } });
    const data = Array.isArray(numbers.body.data) ? numbers.body.data : [];
    // With several numbers the choice is the user's (signup session info), not ours to guess.
    const phoneNumberId = data.length === 1 ? asString(asObject(data[0])?.id) : undefined;
    return { wabaId, phoneNumberId };
  }

  return {
    async sendMessage(credentials: ProviderCredentials, message: OutboundMessage): Promise<SentMessage> {
      const { to, replyTo, callbackData, ...content } = message;
      const { body, status, traceId } = await call('POST', `${credentials.phoneNumberId}/messages`, {
        token: credentials.accessToken,
        body: {
          messaging_product: 'whatsapp',
          recipient_type: 'individual',
          to,
          type: content.type,
          ...messageContent(content),
          ...(replyTo === undefined ? {} : { context: { message_id: replyTo } }),
          ...(callbackData === undefined ? {} : { biz_opaque_callback_data: callbackData }),
        },
      });
      const messages = Array.isArray(body.messages) ? body.messages : [];
      const providerMessageId = asString(asObject(messages[0])?.id);
      if (providerMessageId === undefined) throw unexpectedAnswer('messages[0].id', status, traceId);
      const contacts = Array.isArray(body.contacts) ? body.contacts : [];
      // Users with usernames may come back without a wa_id; the number we sent to is then the best id.
      const recipientWaId = asString(asObject(contacts[0])?.wa_id) ?? to.replace(/^\+/, '');
      return { providerMessageId, recipientWaId };
    },

    markRead: (credentials, providerMessageId) => readReceipt(credentials, providerMessageId, false),
    sendTyping: (credentials, providerMessageId) => readReceipt(credentials, providerMessageId, true),

    async getPhoneNumber(credentials: ProviderCredentials): Promise<PhoneNumberInfo> {
      const { body, status, traceId } = await call('GET', credentials.phoneNumberId, {
        token: credentials.accessToken,
        query: { fields: 'id,display_phone_number,verified_name,quality_rating,name_status,status,messaging_limit_tier,throughput' },
      });
      const phoneNumberId = asString(body.id);
      const displayPhoneNumber = asString(body.display_phone_number);
      if (phoneNumberId === undefined || displayPhoneNumber === undefined) throw unexpectedAnswer('id and display_phone_number', status, traceId);
      return {
        phoneNumberId,
        displayPhoneNumber,
        verifiedName: asString(body.verified_name) ?? '',
        qualityRating: asString(body.quality_rating),
        nameStatus: asString(body.name_status),
        status: asString(body.status),
        messagingLimitTier: asString(body.whatsapp_business_manager_messaging_limit) ?? asString(body.messaging_limit_tier),
        throughputLevel: asString(asObject(body.throughput)?.level),
      };
    },

    async exchangeCode(code: string): Promise<ExchangedCode> {
      if (options.appId === undefined) throw new Error('createCloudProvider: appId is required to exchange a signup code.');
      const { body, status, traceId } = await call('GET', 'oauth/access_token', {
        query: { client_id: options.appId, client_secret: options.appSecret, code },
      });
      const accessToken = asString(body.access_token);
      if (accessToken === undefined) throw unexpectedAnswer('access_token', status, traceId);
      // The code is single-use: once it is spent, losing the token would strand the connection, so a
      // failed look-up of the ids returns the token alone (the signup session info carries the ids).
      try {
        return { accessToken, ...(await findAccount(accessToken)) };
      } catch (error) {
        if (error instanceof ProviderError) return { accessToken, wabaId: undefined, phoneNumberId: undefined };
        throw error;
      }
    },

    async subscribeApp(credentials): Promise<void> {
      const { body, status, traceId } = await call('POST', `${credentials.wabaId}/subscribed_apps`, { token: credentials.accessToken, body: {} });
      if (body.success !== true) throw unexpectedAnswer('success: true', status, traceId);
    },

    close: () => agent.close(),
  };
}
