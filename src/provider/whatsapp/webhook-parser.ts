import { TEMPLATE_STATUSES, type TemplateStatus } from '../provider.ts';
import type { MessageBody, NumberRef, ProviderErrorDetail, ProviderStatus, ProviderUpdate } from '../updates.ts';
import { asArray, asId, asNumber, asObject, asString, type Json } from './json.ts';
import { templateCategoryOf } from './templates.ts';

/**
 * One webhook body of the provider (cloud-api-facts.md §3) as the domain's `ProviderUpdate`s.
 *
 * The provider batches entries, changes and messages, adds fields without notice, and a proxy or a
 * replay can hand us anything JSON. So only a body that is not an envelope at all (not an object, no
 * `entry` array) throws; every other oddity is contained to the smallest part it affects, which is
 * reported as `unhandled` (`malformed`) while its siblings are parsed as usual.
 */

export class InvalidProviderWebhookError extends Error {
  readonly code = 'invalid_provider_webhook';

  constructor(message: string) {
    super(message);
    this.name = 'InvalidProviderWebhookError';
  }
}

const ENVELOPE_OBJECT = 'whatsapp_business_account';

/** Inbound and echoed message types whose object is kept as the content. */
const KNOWN_TYPES: ReadonlySet<string> = new Set([
  'text',
  'image',
  'video',
  'audio',
  'document',
  'sticker',
  'location',
  'contacts',
  'interactive',
  'button',
  'reaction',
  'order',
  'system',
  'request_welcome',
  // Echoes repeat send payloads, which include templates.
  'template',
]);

const STATUSES: ReadonlySet<string> = new Set<ProviderStatus>(['sent', 'delivered', 'read', 'played', 'failed']);

/** Template events that are also statuses; the others (REINSTATED, UNARCHIVED, ...) name no status. */
const EVENT_STATUSES: ReadonlySet<string> = new Set(TEMPLATE_STATUSES.filter((status) => status !== 'unknown'));

/** Fields of a message object the update models; every other field goes to `extra`. */
const MODELLED_MESSAGE_FIELDS: ReadonlySet<string> = new Set(['id', 'from', 'to', 'timestamp', 'type', 'context', 'from_user_id', 'history_context']);
const MODELLED_CONTEXT_FIELDS: ReadonlySet<string> = new Set(['id', 'from', 'forwarded', 'frequently_forwarded']);

/** Unix seconds, as a string (the provider's way) or a number. */
function dateOf(value: unknown): Date | undefined {
  const seconds = asNumber(value);
  if (seconds === undefined || seconds < 0) return undefined;
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function digits(value: string | undefined): string {
  return value?.replace(/\D/g, '') ?? '';
}

function without(object: Json, keys: ReadonlySet<string>): Json {
  return Object.fromEntries(Object.entries(object).filter(([key]) => !keys.has(key)));
}

export function errorDetails(value: unknown): ProviderErrorDetail[] {
  const details: ProviderErrorDetail[] = [];
  for (const raw of asArray(value)) {
    const error = asObject(raw);
    const code = asNumber(error?.code);
    // An error without a code cannot be looked up or acted on; it stays visible in the stored body.
    if (error === undefined || code === undefined || !Number.isInteger(code)) continue;
    details.push({
      code,
      title: asString(error.title),
      message: asString(error.message),
      details: asString(asObject(error.error_data)?.details),
    });
  }
  return details;
}

/** The message's type and the object named after it, with unknown types folded into `unsupported`. */
function messageBody(message: Json): MessageBody {
  const type = asString(message.type) ?? 'unknown';
  const extra = without(message, new Set([...MODELLED_MESSAGE_FIELDS, type]));
  const rawContext = asObject(message.context);
  if (rawContext !== undefined && Object.keys(rawContext).some((key) => !MODELLED_CONTEXT_FIELDS.has(key))) extra.context = rawContext;
  const context = contextOf(rawContext);

  if (KNOWN_TYPES.has(type)) {
    const content = type === 'contacts' ? { contacts: asArray(message.contacts) } : (asObject(message[type]) ?? {});
    return { type, content, context, extra };
  }
  // `unsupported` (older name `unknown`) names the user's real type inside its object; a type this
  // parser does not know is reported the same way, so the caller handles one shape.
  const object = asObject(message[type]) ?? {};
  const isProviderUnsupported = type === 'unsupported' || type === 'unknown';
  const { type: innerType, ...fields } = object;
  const originalType = isProviderUnsupported ? (asString(innerType) ?? type) : type;
  const errors = message.errors;
  delete extra.errors;
  return {
    type: 'unsupported',
    content: { ...(isProviderUnsupported ? fields : object), original_type: originalType, ...(errors === undefined ? {} : { errors }) },
    context,
    extra,
  };
}

function contextOf(context: Json | undefined): MessageBody['context'] {
  if (context === undefined) return undefined;
  const replyTo = asString(context.id);
  const forwarded = context.forwarded === true || context.frequently_forwarded === true;
  const frequentlyForwarded = context.frequently_forwarded === true;
  if (replyTo === undefined && !forwarded) return undefined;
  return {
    ...(replyTo === undefined ? {} : { replyTo }),
    ...(forwarded ? { forwarded } : {}),
    ...(frequentlyForwarded ? { frequentlyForwarded } : {}),
  };
}

interface ChangeContext {
  wabaId: string;
  field: string;
  updates: ProviderUpdate[];
  /** Broken parts of this change, each reported as an `unhandled` update after the good ones. */
  malformed: unknown[];
}

function numberRef(wabaId: string, metadata: unknown): NumberRef | undefined {
  const object = asObject(metadata);
  const phoneNumberId = asId(object?.phone_number_id);
  if (phoneNumberId === undefined) return undefined;
  return { wabaId, phoneNumberId, displayPhoneNumber: asString(object?.display_phone_number)?.replace(/\D/g, '') || undefined };
}

function profileOf(contacts: unknown[], from: string | undefined, userId: string | undefined): Json | undefined {
  const objects = contacts.map(asObject).filter((contact): contact is Json => contact !== undefined);
  const match =
    (from === undefined ? undefined : objects.find((contact) => asString(contact.wa_id) === from)) ??
    (userId === undefined ? undefined : objects.find((contact) => asString(contact.user_id) === userId)) ??
    // A single contact is the sender even when the ids are written differently (`+` or none at all).
    (objects.length === 1 ? objects[0] : undefined);
  return match;
}

function inboundMessages(context: ChangeContext, number: NumberRef, value: Json): void {
  const contacts = asArray(value.contacts);
  for (const raw of asArray(value.messages)) {
    const message = asObject(raw);
    const providerMessageId = asString(message?.id);
    const sentAt = dateOf(message?.timestamp);
    if (message === undefined || providerMessageId === undefined || sentAt === undefined) {
      context.malformed.push(raw);
      continue;
    }
    const from = asString(message.from);
    const contact = profileOf(contacts, from, asString(message.from_user_id));
    context.updates.push({
      kind: 'message',
      number,
      providerMessageId,
      from,
      fromUserId: asString(message.from_user_id) ?? asString(contact?.user_id),
      profileName: asString(asObject(contact?.profile)?.name),
      sentAt,
      body: messageBody(message),
    });
  }
}

function statuses(context: ChangeContext, number: NumberRef, value: Json): void {
  for (const raw of asArray(value.statuses)) {
    const status = asObject(raw);
    const providerMessageId = asString(status?.id);
    const name = asString(status?.status);
    const at = dateOf(status?.timestamp);
    if (status === undefined || providerMessageId === undefined || name === undefined || !STATUSES.has(name) || at === undefined) {
      context.malformed.push(raw);
      continue;
    }
    const pricing = asObject(status.pricing);
    context.updates.push({
      kind: 'status',
      number,
      providerMessageId,
      status: name as ProviderStatus,
      at,
      recipientId: asString(status.recipient_id),
      errors: errorDetails(status.errors),
      pricing: pricing === undefined ? undefined : { category: asString(pricing.category), type: asString(pricing.type) },
      callbackData: asString(status.biz_opaque_callback_data),
    });
  }
}

function echoes(context: ChangeContext, number: NumberRef, value: Json): void {
  for (const raw of asArray(value.message_echoes)) {
    const echo = asObject(raw);
    const providerMessageId = asString(echo?.id);
    const to = asString(echo?.to);
    const sentAt = dateOf(echo?.timestamp);
    if (echo === undefined || providerMessageId === undefined || to === undefined || sentAt === undefined) {
      context.malformed.push(raw);
      continue;
    }
    context.updates.push({ kind: 'echo', number, providerMessageId, to, sentAt, body: messageBody(echo) });
  }
}

type HistoryThread = Extract<ProviderUpdate, { kind: 'history' }>['threads'][number];

function historyThread(context: ChangeContext, number: NumberRef, raw: unknown): HistoryThread | undefined {
  const thread = asObject(raw);
  const userId = asString(thread?.id);
  if (thread === undefined || userId === undefined) {
    context.malformed.push(raw);
    return undefined;
  }
  const business = digits(number.displayPhoneNumber);
  const messages: HistoryThread['messages'] = [];
  for (const rawMessage of asArray(thread.messages)) {
    const message = asObject(rawMessage);
    const providerMessageId = asString(message?.id);
    const sentAt = dateOf(message?.timestamp);
    if (message === undefined || providerMessageId === undefined || sentAt === undefined) {
      context.malformed.push(rawMessage);
      continue;
    }
    const from = asString(message.from);
    // The business's own messages carry its number in `from` (and only they carry `to`).
    const outbound = from !== undefined && business !== '' ? digits(from) === business : message.to !== undefined;
    messages.push({
      providerMessageId,
      direction: outbound ? 'outbound' : 'inbound',
      sentAt,
      status: asString(asObject(message.history_context)?.status),
      body: messageBody(message),
    });
  }
  return { userId, messages };
}

function history(context: ChangeContext, number: NumberRef, value: Json): void {
  for (const raw of asArray(value.history)) {
    const chunk = asObject(raw);
    if (chunk === undefined) {
      context.malformed.push(raw);
      continue;
    }
    const metadata = asObject(chunk.metadata);
    const threads = asArray(chunk.threads)
      .map((thread) => historyThread(context, number, thread))
      .filter((thread): thread is HistoryThread => thread !== undefined);
    context.updates.push({
      kind: 'history',
      number,
      phase: asNumber(metadata?.phase),
      chunkOrder: asNumber(metadata?.chunk_order),
      progress: asNumber(metadata?.progress),
      threads,
      errors: errorDetails(chunk.errors),
    });
  }
}

/** `messages`, `smb_message_echoes` and `history` share one value shape: metadata plus arrays. */
function messagesValue(context: ChangeContext, value: Json): void {
  const number = numberRef(context.wabaId, value.metadata);
  if (number === undefined) {
    context.malformed.push(value);
    return;
  }
  const before = context.updates.length + context.malformed.length;
  inboundMessages(context, number, value);
  statuses(context, number, value);
  echoes(context, number, value);
  history(context, number, value);
  const errors = errorDetails(value.errors);
  if (errors.length > 0) context.updates.push({ kind: 'errors', number, errors });
  if (context.updates.length + context.malformed.length === before) {
    context.updates.push({ kind: 'unhandled', wabaId: context.wabaId, field: context.field, reason: 'unprocessed_field', value });
  }
}

function templateStatus(context: ChangeContext, value: Json): void {
  const providerTemplateId = asId(value.message_template_id);
  const name = asString(value.message_template_name);
  const event = asString(value.event)?.toUpperCase();
  if (providerTemplateId === undefined || name === undefined || event === undefined) {
    context.malformed.push(value);
    return;
  }
  const word = event.toLowerCase();
  context.updates.push({
    kind: 'template_status',
    wabaId: context.wabaId,
    providerTemplateId,
    name,
    language: asString(value.message_template_language) ?? '',
    event,
    status: EVENT_STATUSES.has(word) ? (word as TemplateStatus) : undefined,
    category: templateCategoryOf(value.message_template_category),
    reason: asString(value.reason),
    extra: without(
      value,
      new Set(['event', 'message_template_id', 'message_template_name', 'message_template_language', 'message_template_category', 'reason']),
    ),
  });
}

function numberQuality(context: ChangeContext, value: Json): void {
  const displayPhoneNumber = asString(value.display_phone_number);
  const event = asString(value.event);
  if (displayPhoneNumber === undefined || event === undefined) {
    context.malformed.push(value);
    return;
  }
  context.updates.push({
    kind: 'number_quality',
    wabaId: context.wabaId,
    displayPhoneNumber,
    event,
    maxDailyLimit: asString(value.max_daily_conversations_per_business),
    currentLimit: asString(value.current_limit),
    oldLimit: asString(value.old_limit),
  });
}

function accountUpdate(context: ChangeContext, value: Json): void {
  const event = asString(value.event);
  if (event === undefined) {
    context.malformed.push(value);
    return;
  }
  context.updates.push({
    kind: 'account',
    wabaId: context.wabaId,
    event,
    phoneNumberId: asId(value.phone_number_id) ?? asId(asObject(value.waba_info)?.phone_number_id),
    extra: without(value, new Set(['event', 'phone_number_id'])),
  });
}

function parseChange(context: ChangeContext, value: Json): void {
  switch (context.field) {
    case 'messages':
    case 'smb_message_echoes':
    case 'history':
      return messagesValue(context, value);
    case 'message_template_status_update':
      return templateStatus(context, value);
    case 'phone_number_quality_update':
      return numberQuality(context, value);
    case 'account_update':
      return accountUpdate(context, value);
    default:
      context.updates.push({ kind: 'unhandled', wabaId: context.wabaId, field: context.field, reason: 'unprocessed_field', value });
  }
}

/**
 * Turns one webhook body into updates, in the order the provider listed them. Throws
 * `InvalidProviderWebhookError` only for a body that is not an envelope; never for odd content.
 */
export function parseProviderWebhook(body: unknown): ProviderUpdate[] {
  const envelope = asObject(body);
  if (envelope === undefined) throw new InvalidProviderWebhookError('The webhook body is not a JSON object.');
  if (!Array.isArray(envelope.entry)) throw new InvalidProviderWebhookError('The webhook body has no entry array.');
  // Another product's webhook (a Page, Instagram) on the same callback: kept, never read as ours.
  const foreign = envelope.object !== undefined && envelope.object !== ENVELOPE_OBJECT;

  const updates: ProviderUpdate[] = [];
  for (const rawEntry of envelope.entry) {
    const entry = asObject(rawEntry);
    const wabaId = asId(entry?.id);
    if (entry === undefined || wabaId === undefined || !Array.isArray(entry.changes)) {
      updates.push({ kind: 'unhandled', wabaId: wabaId ?? '', field: '', reason: 'malformed', value: rawEntry });
      continue;
    }
    for (const rawChange of entry.changes) {
      const change = asObject(rawChange);
      const field = asString(change?.field) ?? '';
      const value = asObject(change?.value);
      if (foreign) {
        updates.push({ kind: 'unhandled', wabaId, field, reason: 'unprocessed_field', value: rawChange });
        continue;
      }
      if (value === undefined || field === '') {
        updates.push({ kind: 'unhandled', wabaId, field, reason: 'malformed', value: rawChange });
        continue;
      }
      const context: ChangeContext = { wabaId, field, updates: [], malformed: [] };
      try {
        parseChange(context, value);
      } catch {
        // Defence in depth: the readers above check every shape, but one webhook must never take
        // its batch down with it, so a slip here costs this change only.
        context.updates = [];
        context.malformed = [value];
      }
      updates.push(...context.updates);
      for (const part of context.malformed) updates.push({ kind: 'unhandled', wabaId, field, reason: 'malformed', value: part });
    }
  }
  return updates;
}
