import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { FormData } from 'undici';
import {
  ProviderError,
  type CreatedTemplate,
  type DownloadedMedia,
  type ExchangedCode,
  type MediaInfo,
  type OutboundMessage,
  type PhoneNumberInfo,
  type Provider,
  type ProviderCredentials,
  type SentMessage,
  type Template,
} from '../provider.ts';
import { createGraphClient, discardBody, headerValue, transportFailure, unexpectedAnswer, type BinaryAnswer, type GraphAnswer } from './graph-client.ts';
import { asArray, asId, asNumber, asObject, asString } from './json.ts';
import { sendPayload } from './outbound-message.ts';
import { readTemplate, templateCategoryOf, templateCreatePayload, templateStatusOf } from './templates.ts';

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

const DEFAULT_TIMEOUT_MS = 10_000;
/** The provider's largest media (documents) are 100 MB; a little headroom for its rounding. */
export const DEFAULT_MAX_MEDIA_BYTES = 100 * 1024 * 1024;
/** Uploads get extra time on top of the call's cap, assuming at least this many bytes a second. */
const SLOWEST_UPLOAD_BYTES_PER_SECOND = 250_000;
const TEMPLATE_PAGE_SIZE = 100;
/** 100 templates a page: far more than an account may hold, so more pages mean a paging loop. */
const MAX_TEMPLATE_PAGES = 100;
const TEMPLATE_FIELDS = 'id,name,language,status,category,components,parameter_format,quality_score,rejected_reason';
const SYNC_TYPES = { history: 'history', contacts: 'smb_app_state_sync' } as const;

function requireSuccess({ body, status, traceId }: GraphAnswer): void {
  if (body.success !== true) throw unexpectedAnswer('success: true', status, traceId);
}

function mediaTooLarge(size: number, maxBytes: number): ProviderError {
  return new ProviderError({ category: 'rejected', retryable: false, message: `The media is ${size} bytes, more than the ${maxBytes} allowed.` });
}

/** The provider's `sha256` is hex on the media node; webhook payloads carry base64. Either is checked. */
function digestMatches(expected: string, digest: Buffer): boolean | undefined {
  if (/^[0-9a-f]{64}$/i.test(expected)) return digest.toString('hex') === expected.toLowerCase();
  if (/^[A-Za-z0-9+/]{43}=$/.test(expected)) return digest.toString('base64') === expected;
  return undefined;
}

/**
 * Passes the body through, failing once more than `maxBytes` arrived, and at the end if the bytes do
 * not match the provider's SHA-256. Destroying the returned stream early releases the connection.
 */
async function* checkedBody(body: BinaryAnswer['body'], maxBytes: number, sha256: string | undefined): AsyncGenerator<Uint8Array> {
  const hash = createHash('sha256');
  let received = 0;
  let finished = false;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      received += chunk.byteLength;
      if (received > maxBytes) throw mediaTooLarge(received, maxBytes);
      hash.update(chunk);
      yield chunk;
    }
    finished = true;
  } catch (error) {
    throw transportFailure(error);
  } finally {
    if (!finished) discardBody(body);
  }
  if (sha256 !== undefined && digestMatches(sha256, hash.digest()) === false) {
    throw new ProviderError({ category: 'unavailable', retryable: true, message: "The media's bytes do not match the SHA-256 the provider gave." });
  }
}

/** The provider's Graph API (cloud-api-facts.md §1, §2, §5–§7) behind the domain's provider port. */
export function createCloudProvider(options: CloudProviderOptions): CloudProvider {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const graph = createGraphClient({
    baseUrl: options.baseUrl,
    version: options.version,
    appSecret: options.appSecret,
    appSecretProof: options.appSecretProof ?? false,
    timeoutMs,
  });
  const { call } = graph;

  async function readReceipt(credentials: ProviderCredentials, providerMessageId: string, typing: boolean): Promise<void> {
    const answer = await call('POST', `${credentials.phoneNumberId}/messages`, {
      token: credentials.accessToken,
      body: {
        messaging_product: 'whatsapp',
        status: 'read',
        message_id: providerMessageId,
        ...(typing ? { typing_indicator: { type: 'text' } } : {}),
      },
    });
    requireSuccess(answer);
  }

  /** The account behind a business token, the provider's way: debug_token, then its phone numbers (§7.4). */
  async function findAccount(accessToken: string): Promise<Omit<ExchangedCode, 'accessToken'>> {
    const debug = await call('GET', 'debug_token', { token: accessToken, query: { input_token: accessToken } });
    const scopes = asObject(debug.body.data)?.granular_scopes;
    const management = Array.isArray(scopes)
      ? (scopes.map(asObject).find((scope) => scope?.scope === 'whatsapp_business_management') ?? asObject(scopes[0]))
      : undefined;
    const wabaId = asString(asArray(management?.target_ids)[0]);
    if (wabaId === undefined) return { wabaId: undefined, phoneNumberId: undefined, phoneNumberIds: [] };
    const numbers = await call('GET', `${wabaId}/phone_numbers`, { token: accessToken, query: { fields: 'id' } });
    const phoneNumberIds = asArray(numbers.body.data)
      .map((number) => asString(asObject(number)?.id))
      .filter((id): id is string => id !== undefined);
    // With several numbers the choice is the user's (signup session info), not ours to guess.
    return { wabaId, phoneNumberId: phoneNumberIds.length === 1 ? phoneNumberIds[0] : undefined, phoneNumberIds };
  }

  async function getMedia(credentials: ProviderCredentials, providerMediaId: string): Promise<MediaInfo> {
    // phone_number_id makes the provider check that the media belongs to this number.
    const { body, status, traceId } = await call('GET', encodeURIComponent(providerMediaId), {
      token: credentials.accessToken,
      query: { phone_number_id: credentials.phoneNumberId },
    });
    const url = asString(body.url);
    if (url === undefined) throw unexpectedAnswer('url', status, traceId);
    return {
      providerMediaId: asString(body.id) ?? providerMediaId,
      url,
      mimeType: asString(body.mime_type) ?? 'application/octet-stream',
      sha256: asString(body.sha256),
      fileSize: asNumber(body.file_size),
    };
  }

  return {
    async sendMessage(credentials: ProviderCredentials, message: OutboundMessage): Promise<SentMessage> {
      const { body, status, traceId } = await call('POST', `${credentials.phoneNumberId}/messages`, {
        token: credentials.accessToken,
        body: sendPayload(message),
      });
      const providerMessageId = asString(asObject(asArray(body.messages)[0])?.id);
      if (providerMessageId === undefined) throw unexpectedAnswer('messages[0].id', status, traceId);
      // Users with usernames may come back without a wa_id; the number we sent to is then the best id.
      const recipientWaId = asString(asObject(asArray(body.contacts)[0])?.wa_id) ?? message.to.replace(/^\+/, '');
      return { providerMessageId, recipientWaId };
    },

    markRead: (credentials, providerMessageId) => readReceipt(credentials, providerMessageId, false),
    sendTyping: (credentials, providerMessageId) => readReceipt(credentials, providerMessageId, true),

    async getPhoneNumber(credentials: ProviderCredentials): Promise<PhoneNumberInfo> {
      const { body, status, traceId } = await call('GET', credentials.phoneNumberId, {
        token: credentials.accessToken,
        query: {
          fields:
            'id,display_phone_number,verified_name,quality_rating,name_status,status,messaging_limit_tier,whatsapp_business_manager_messaging_limit,throughput,is_on_biz_app,platform_type',
        },
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
        // Limits moved from the number to the business portfolio in October 2025; the old field lingers.
        messagingLimitTier: asString(body.whatsapp_business_manager_messaging_limit) ?? asString(body.messaging_limit_tier),
        throughputLevel: asString(asObject(body.throughput)?.level),
        isOnBizApp: body.is_on_biz_app === true,
        platformType: asString(body.platform_type),
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
        if (error instanceof ProviderError) return { accessToken, wabaId: undefined, phoneNumberId: undefined, phoneNumberIds: [] };
        throw error;
      }
    },

    async subscribeApp(credentials): Promise<void> {
      requireSuccess(await call('POST', `${credentials.wabaId}/subscribed_apps`, { token: credentials.accessToken, body: {} }));
    },

    async unsubscribeApp(credentials): Promise<void> {
      requireSuccess(await call('DELETE', `${credentials.wabaId}/subscribed_apps`, { token: credentials.accessToken }));
    },

    async registerNumber(credentials, pin): Promise<void> {
      // Checked here because the provider counts every attempt against a small budget (§7.2).
      if (!/^\d{6}$/.test(pin)) throw new RangeError('registerNumber: the PIN must be exactly six digits.');
      requireSuccess(
        await call('POST', `${credentials.phoneNumberId}/register`, { token: credentials.accessToken, body: { messaging_product: 'whatsapp', pin } }),
      );
    },

    async requestHistorySync(credentials, kind) {
      const { body } = await call('POST', `${credentials.phoneNumberId}/smb_app_data`, {
        token: credentials.accessToken,
        body: { messaging_product: 'whatsapp', sync_type: SYNC_TYPES[kind] },
      });
      return { requestId: asString(body.request_id) };
    },

    async uploadMedia(credentials, media) {
      const form = new FormData();
      form.append('messaging_product', 'whatsapp');
      form.append('type', media.mimeType);
      form.append('file', new Blob([new Uint8Array(media.bytes)], { type: media.mimeType }), media.filename ?? 'file');
      const { body, status, traceId } = await call('POST', `${credentials.phoneNumberId}/media`, {
        token: credentials.accessToken,
        form,
        totalTimeoutMs: timeoutMs * 2 + Math.ceil((media.bytes.byteLength / SLOWEST_UPLOAD_BYTES_PER_SECOND) * 1000),
      });
      const providerMediaId = asString(body.id);
      if (providerMediaId === undefined) throw unexpectedAnswer('id', status, traceId);
      return { providerMediaId };
    },

    getMedia,

    async downloadMedia(credentials, providerMediaId, downloadOptions = {}): Promise<DownloadedMedia> {
      const maxBytes = downloadOptions.maxBytes ?? DEFAULT_MAX_MEDIA_BYTES;
      let info = await getMedia(credentials, providerMediaId);
      if (info.fileSize !== undefined && info.fileSize > maxBytes) throw mediaTooLarge(info.fileSize, maxBytes);
      let answer: BinaryAnswer;
      try {
        answer = await graph.fetchBinary(info.url, credentials.accessToken);
      } catch (error) {
        // The URL lives about five minutes; an expired one answers 404, and a fresh look-up fixes it.
        if (!(error instanceof ProviderError) || error.httpStatus !== 404) throw error;
        info = await getMedia(credentials, providerMediaId);
        answer = await graph.fetchBinary(info.url, credentials.accessToken);
      }
      const length = asNumber(headerValue(answer.headers, 'content-length'));
      if (length !== undefined && length > maxBytes) {
        discardBody(answer.body);
        throw mediaTooLarge(length, maxBytes);
      }
      return {
        // The provider's record names codecs (`audio/ogg; codecs=opus`) that a CDN's header may not.
        mimeType: info.mimeType !== 'application/octet-stream' ? info.mimeType : (headerValue(answer.headers, 'content-type') ?? info.mimeType),
        size: length ?? info.fileSize,
        sha256: info.sha256,
        stream: Readable.from(checkedBody(answer.body, maxBytes, info.sha256), { objectMode: false }),
      };
    },

    async deleteMedia(credentials, providerMediaId): Promise<void> {
      requireSuccess(
        await call('DELETE', encodeURIComponent(providerMediaId), { token: credentials.accessToken, query: { phone_number_id: credentials.phoneNumberId } }),
      );
    },

    async listTemplates(credentials): Promise<Template[]> {
      const templates: Template[] = [];
      const seen = new Set<string>();
      let after: string | undefined;
      for (let page = 0; page < MAX_TEMPLATE_PAGES; page += 1) {
        const { body, status, traceId } = await call('GET', `${credentials.wabaId}/message_templates`, {
          token: credentials.accessToken,
          query: { fields: TEMPLATE_FIELDS, limit: String(TEMPLATE_PAGE_SIZE), ...(after === undefined ? {} : { after }) },
        });
        if (!Array.isArray(body.data)) throw unexpectedAnswer('data', status, traceId);
        for (const raw of body.data) {
          const template = readTemplate(raw);
          if (template !== undefined) templates.push(template);
        }
        const paging = asObject(body.paging);
        const next = asString(paging?.next);
        // Graph sends `next` only when another page exists. The cursor is read rather than `next`
        // followed, so that the token never goes to a host other than the configured one.
        if (next === undefined) return templates;
        const cursor = asString(asObject(paging?.cursors)?.after) ?? URL.parse(next)?.searchParams.get('after') ?? undefined;
        if (cursor === undefined || seen.has(cursor)) throw unexpectedAnswer('a new paging cursor', status, traceId);
        seen.add(cursor);
        after = cursor;
      }
      throw new ProviderError({ category: 'unavailable', retryable: true, message: `The provider's template list ran past ${MAX_TEMPLATE_PAGES} pages.` });
    },

    async createTemplate(credentials, draft): Promise<CreatedTemplate> {
      const { body, status, traceId } = await call('POST', `${credentials.wabaId}/message_templates`, {
        token: credentials.accessToken,
        body: templateCreatePayload(draft),
      });
      const providerTemplateId = asId(body.id);
      if (providerTemplateId === undefined) throw unexpectedAnswer('id', status, traceId);
      return {
        providerTemplateId,
        // A new template is pending review unless the provider says otherwise.
        status: body.status === undefined ? 'pending' : templateStatusOf(body.status),
        category: templateCategoryOf(body.category) ?? draft.category,
      };
    },

    async deleteTemplate(credentials, template): Promise<void> {
      requireSuccess(
        await call('DELETE', `${credentials.wabaId}/message_templates`, {
          token: credentials.accessToken,
          query: { name: template.name, ...(template.providerTemplateId === undefined ? {} : { hsm_id: template.providerTemplateId }) },
        }),
      );
    },

    close: graph.close,
  };
}
