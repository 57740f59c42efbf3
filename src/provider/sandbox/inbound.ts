import { AppError } from '../../lib/errors.ts';
import { invalid, notFound } from './control-http.ts';
import type { Echo, History, Inbound, MediaInput } from './control.schemas.ts';
import { MEDIA_KINDS, MEDIA_LIMITS, mediaKindOf, PLACEHOLDER_MIME_TYPES, placeholderBytes, type MediaKind, type MediaStore } from './media.ts';
import { newWamid, type SandboxMessage, type SandboxNumber } from './state.ts';
import { displayDigits, providerErrorObject, unixSeconds } from './webhooks.ts';

/**
 * The message objects of webhooks (§3.2, §3.5) built from control requests: what a simulated user
 * sends, what the business typed in the WhatsApp Business app, and its chat history.
 */

type Json = Record<string, unknown>;

const CAPTIONED: readonly MediaKind[] = ['image', 'video', 'document'];
/** Types that carry one of the shared content objects, in inbound messages and echoes alike. */
const CONTENT_TYPES = ['text', ...MEDIA_KINDS, 'location', 'contacts', 'interactive', 'reaction'] as const;

function isMediaKind(type: string): type is MediaKind {
  return (MEDIA_KINDS as readonly string[]).includes(type);
}

/**
 * A media object the way the provider delivers it (`{id, mime_type, sha256, …}`): an existing media
 * id of the account, or a file the sandbox stores now so that the id in the webhook can be downloaded.
 */
async function receivedMedia(kind: MediaKind, input: MediaInput, number: SandboxNumber, media: MediaStore): Promise<Json> {
  if (input.caption !== undefined && !CAPTIONED.includes(kind))
    throw invalid(`\`${kind}.caption\` is only for image, video and document messages.`, { param: `${kind}.caption` });
  if (input.filename !== undefined && kind !== 'document') throw invalid(`\`${kind}.filename\` is only for document messages.`, { param: `${kind}.filename` });
  let stored;
  if (input.id !== undefined) {
    stored = await media.find(input.id);
    if (stored === undefined || stored.wabaId !== number.wabaId) throw notFound(`No media ${input.id} in the account of number ${number.phoneNumberId}.`);
    if (mediaKindOf(stored.mimeType) !== kind) throw invalid(`Media ${input.id} is ${stored.mimeType}, which is not ${kind} media.`, { param: `${kind}.id` });
  } else {
    const mimeType = input.mime_type ?? PLACEHOLDER_MIME_TYPES[kind];
    if (mediaKindOf(mimeType) !== kind)
      throw invalid(`\`${kind}.mime_type\` must be one of ${MEDIA_LIMITS[kind].mimeTypes.join(', ')}.`, { param: `${kind}.mime_type` });
    const bytes = input.content_base64 === undefined ? placeholderBytes(kind) : Buffer.from(input.content_base64, 'base64');
    if (bytes.length === 0) throw invalid(`\`${kind}.content_base64\` holds no bytes.`, { param: `${kind}.content_base64` });
    if (bytes.length > MEDIA_LIMITS[kind].maxBytes)
      throw invalid(`${kind} media may be at most ${MEDIA_LIMITS[kind].maxBytes} bytes.`, { param: `${kind}.content_base64` });
    stored = await media.put({
      wabaId: number.wabaId,
      phoneNumberId: number.phoneNumberId,
      mimeType,
      bytes,
      filename: input.filename ?? (kind === 'document' ? 'document.pdf' : undefined),
      origin: 'received',
    });
    if (stored === undefined)
      throw new AppError('media_too_large', `The file is larger than the sandbox keeps (${media.maxTotalBytes} bytes).`, { param: `${kind}.content_base64` });
  }
  return {
    ...(input.caption === undefined ? {} : { caption: input.caption }),
    ...(kind === 'document' ? { filename: stored.filename ?? input.filename ?? 'document' } : {}),
    mime_type: stored.mimeType,
    sha256: stored.sha256,
    id: stored.id,
    ...(kind === 'audio' ? { voice: input.voice ?? false } : {}),
    ...(kind === 'sticker' ? { animated: input.animated ?? false } : {}),
  };
}

/** The object named by `type` for the content types inbound messages and echoes share. */
async function contentObject(input: Inbound | Echo, type: (typeof CONTENT_TYPES)[number], number: SandboxNumber, media: MediaStore): Promise<unknown> {
  const given = input[type];
  if (given === undefined) throw invalid(`A ${type} message needs \`${type}\`.`, { param: type });
  if (type === 'text') return { body: given };
  if (isMediaKind(type)) return receivedMedia(type, given as MediaInput, number, media);
  return given;
}

function isContentType(type: string): type is (typeof CONTENT_TYPES)[number] {
  return (CONTENT_TYPES as readonly string[]).includes(type);
}

const SYSTEM_BODIES: Readonly<Record<string, string>> = {
  customer_changed_number: 'User changed their phone number.',
  customer_identity_changed: "User's security code changed.",
  user_changed_user_id: 'User changed their user id.',
};

/** One `messages[]` entry of an inbound webhook (§3.2). */
export async function inboundMessage(input: Inbound, number: SandboxNumber, message: SandboxMessage, media: MediaStore): Promise<Json> {
  if (input.referral !== undefined && input.type !== 'text') throw invalid('`referral` is only sent on text messages.', { param: 'referral' });
  const context = input.context;
  const base: Json = {
    from: message.waId,
    id: message.id,
    timestamp: unixSeconds(message.createdAt),
    ...(context === undefined
      ? {}
      : {
          context: {
            ...(context.message_id === undefined ? {} : { from: displayDigits(number), id: context.message_id }),
            ...(context.forwarded === undefined ? {} : { forwarded: context.forwarded }),
            ...(context.frequently_forwarded === undefined ? {} : { frequently_forwarded: context.frequently_forwarded }),
            ...(context.referred_product === undefined ? {} : { referred_product: context.referred_product }),
          },
        }),
  };
  const type = input.type;
  if (type === 'request_welcome') return { ...base, type };
  if (isContentType(type)) {
    const referral = input.referral === undefined ? {} : { referral: { source_type: 'ad', ...input.referral } };
    return { ...base, type, [type]: await contentObject(input, type, number, media), ...referral };
  }
  if (type === 'button' || type === 'order') {
    const given = input[type];
    if (given === undefined) throw invalid(`A ${type} message needs \`${type}\`.`, { param: type });
    return { ...base, type, [type]: given };
  }
  if (type === 'system') {
    const system = input.system;
    if (system === undefined) throw invalid('A system message needs `system`.', { param: 'system' });
    if (system.type === 'customer_changed_number' && system.new_wa_id === undefined)
      throw invalid('`system.new_wa_id` is required for customer_changed_number.', { param: 'system.new_wa_id' });
    return {
      ...base,
      type,
      system: {
        body: system.body ?? SYSTEM_BODIES[system.type],
        type: system.type,
        ...(system.new_wa_id === undefined ? {} : { wa_id: system.new_wa_id }),
        ...(system.user_id === undefined ? {} : { user_id: system.user_id }),
      },
    };
  }
  // Anything the provider cannot render (polls, deleted messages, …) arrives like this (§3.2).
  return {
    ...base,
    type: 'unsupported',
    unsupported: { type },
    errors: [providerErrorObject(131051, 'Message type is currently not supported.', 'Message type unknown')],
  };
}

/** One `message_echoes[]` entry (§3.5): what the business sent from the WhatsApp Business app. */
export async function echoMessage(input: Echo, number: SandboxNumber, message: SandboxMessage, media: MediaStore): Promise<Json> {
  return {
    from: displayDigits(number),
    to: message.waId,
    id: message.id,
    timestamp: unixSeconds(message.createdAt),
    type: input.type,
    [input.type]: await contentObject(input, input.type, number, media),
  };
}

function historyTimestamp(value: number | string | undefined, now: Date): string {
  if (value === undefined) return unixSeconds(now);
  if (typeof value === 'number') return String(value);
  return unixSeconds(new Date(value));
}

/** The `history[]` entry of a history webhook (§3.5): one chunk of threads, or the declined-share error. */
export function historyEntry(input: History, number: SandboxNumber, now: Date): Json {
  if (input.error !== undefined) {
    if (input.threads !== undefined) throw invalid('Send either `threads` or `error`, not both.', { param: 'threads' });
    const code = input.error.code ?? 2593109;
    return { errors: [providerErrorObject(code, input.error.details ?? 'The business declined to share its chat history.')] };
  }
  if (input.threads === undefined) throw invalid('Send `threads` (a chunk of history) or `error` (a declined share).', { param: 'threads' });
  if (input.progress === undefined) throw invalid('`progress` (0 to 100) is required with `threads`.', { param: 'progress' });
  return {
    metadata: { phase: input.phase ?? 0, chunk_order: input.chunk_order ?? 1, progress: input.progress },
    threads: input.threads.map((thread) => {
      const user = thread.user.replace(/\D/g, '');
      return {
        id: user,
        messages: thread.messages.map((entry) => {
          const type = entry.type ?? 'text';
          let content: Json;
          if (type === 'text') {
            if (entry.text === undefined) throw invalid('A text history message needs `text`.', { param: 'threads.messages.text' });
            content = { body: entry.text };
          } else {
            // History media arrive as placeholders without ids; later webhooks would carry them (§3.5).
            content = { mime_type: PLACEHOLDER_MIME_TYPES[type], ...(entry.caption === undefined ? {} : { caption: entry.caption }) };
          }
          const outbound = entry.direction === 'outbound';
          return {
            from: outbound ? displayDigits(number) : user,
            ...(outbound ? { to: user } : {}),
            id: newWamid(user),
            timestamp: historyTimestamp(entry.timestamp, now),
            type,
            [type]: content,
            history_context: { status: entry.status ?? (outbound ? 'DELIVERED' : 'READ') },
          };
        }),
      };
    }),
  };
}
