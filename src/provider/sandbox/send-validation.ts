import { GraphError } from './graph-errors.ts';

/**
 * Validation of `POST /{phone_number_id}/messages` bodies, hand-written rather than schema-driven
 * because the provider answers each mistake with its own code and wording (§2, §8.3), which a
 * generic schema error could not reproduce.
 */

export const MESSAGE_TYPES = ['text', 'image', 'audio', 'video', 'document', 'sticker', 'location', 'contacts', 'interactive', 'template', 'reaction'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

const CAPTIONED: readonly string[] = ['image', 'video', 'document'];

export type SendRequest =
  | { kind: 'read'; messageId: string; typing: boolean }
  | {
      kind: 'message';
      to: string;
      waId: string;
      type: MessageType;
      /** The object named by `type` (an array for contacts), already checked. */
      content: unknown;
      bizOpaqueCallbackData: string | undefined;
    };

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function required(param: string): GraphError {
  return new GraphError(100, `The parameter ${param} is required.`);
}

function invalid(param: string, why: string): GraphError {
  return new GraphError(131009, `Param ${param} ${why}`);
}

function requireString(object: Json, key: string, path: string, options: { max?: number; allowEmpty?: boolean } = {}): string {
  const value = object[key];
  if (value === undefined) throw required(`${path}${key}`);
  if (typeof value !== 'string') throw invalid(`${path}${key}`, 'must be a string.');
  if (!options.allowEmpty && value.trim() === '') throw invalid(`${path}${key}`, 'must not be empty.');
  if (options.max !== undefined && value.length > options.max) throw invalid(`${path}${key}`, `must be at most ${options.max} characters long.`);
  return value;
}

function validateMedia(type: string, media: Json): void {
  const hasId = media.id !== undefined;
  const hasLink = media.link !== undefined;
  if (hasId === hasLink) throw invalid(`${type}`, 'must have exactly one of id or link.');
  if (hasId) requireString(media, 'id', `${type}.`);
  if (hasLink) {
    const link = requireString(media, 'link', `${type}.`);
    let protocol: string;
    try {
      protocol = new URL(link).protocol;
    } catch {
      throw invalid(`${type}.link`, 'must be a valid URL.');
    }
    if (protocol !== 'http:' && protocol !== 'https:') throw invalid(`${type}.link`, 'must be an http or https URL.');
  }
  if (media.caption !== undefined) {
    if (!CAPTIONED.includes(type)) throw invalid(`${type}.caption`, `is not allowed for ${type} messages.`);
    requireString(media, 'caption', `${type}.`, { max: 1024, allowEmpty: true });
  }
  if (media.filename !== undefined) {
    if (type !== 'document') throw invalid(`${type}.filename`, 'is allowed only for document messages.');
    requireString(media, 'filename', `${type}.`);
  }
}

function validateTypeObject(type: MessageType, object: unknown): void {
  if (type === 'contacts') {
    if (!Array.isArray(object) || object.length === 0) throw invalid('contacts', 'must be a non-empty array.');
    object.forEach((contact: unknown, index) => {
      if (!isObject(contact) || !isObject(contact.name)) throw required(`contacts[${index}].name`);
      requireString(contact.name, 'formatted_name', `contacts[${index}].name.`);
    });
    return;
  }
  if (!isObject(object)) throw invalid(type, 'must be an object.');
  switch (type) {
    case 'text':
      requireString(object, 'body', 'text.', { max: 4096 });
      if (object.preview_url !== undefined && typeof object.preview_url !== 'boolean') throw invalid('text.preview_url', 'must be a boolean.');
      return;
    case 'reaction':
      requireString(object, 'message_id', 'reaction.');
      // An empty emoji is how a reaction is removed (§2.2).
      requireString(object, 'emoji', 'reaction.', { allowEmpty: true });
      return;
    case 'template': {
      requireString(object, 'name', 'template.', { max: 512 });
      if (!isObject(object.language)) throw required('template.language');
      requireString(object.language, 'code', 'template.language.');
      if (object.components !== undefined) {
        if (!Array.isArray(object.components)) throw invalid('template.components', 'must be an array.');
        object.components.forEach((component: unknown, index) => {
          if (!isObject(component)) throw invalid(`template.components[${index}]`, 'must be an object.');
          requireString(component, 'type', `template.components[${index}].`);
          if (component.parameters !== undefined && !Array.isArray(component.parameters))
            throw invalid(`template.components[${index}].parameters`, 'must be an array.');
        });
      }
      return;
    }
    case 'location':
      for (const key of ['latitude', 'longitude']) {
        if (object[key] === undefined) throw required(`location.${key}`);
        if (typeof object[key] !== 'number' && (typeof object[key] !== 'string' || Number.isNaN(Number(object[key])))) {
          throw invalid(`location.${key}`, 'must be a number.');
        }
      }
      return;
    case 'interactive':
      requireString(object, 'type', 'interactive.');
      if (!isObject(object.action)) throw required('interactive.action');
      return;
    default:
      validateMedia(type, object);
  }
}

export function parseSendRequest(body: unknown): SendRequest {
  if (!isObject(body)) throw new GraphError(100, 'The request body must be a JSON object.');
  if (body.messaging_product === undefined) throw required('messaging_product');
  if (body.messaging_product !== 'whatsapp')
    throw new GraphError(100, `Param messaging_product must be one of {WHATSAPP} - got ${JSON.stringify(body.messaging_product)}.`);

  if (body.status !== undefined) {
    if (body.status !== 'read') throw new GraphError(100, 'Param status must be one of {READ}.');
    const messageId = requireString(body, 'message_id', '');
    let typing = false;
    if (body.typing_indicator !== undefined) {
      if (!isObject(body.typing_indicator) || body.typing_indicator.type !== 'text') throw invalid('typing_indicator.type', 'must be one of {TEXT}.');
      typing = true;
    }
    return { kind: 'read', messageId, typing };
  }

  const recipientType = body.recipient_type ?? 'individual';
  if (recipientType !== 'individual' && recipientType !== 'group') throw new GraphError(100, 'Param recipient_type must be one of {INDIVIDUAL, GROUP}.');
  const to = requireString(body, 'to', '');
  const waId = recipientType === 'group' ? to : to.replace(/\D/g, '');
  if (waId === '') throw invalid('to', 'must be a phone number or a WhatsApp id.');

  const type = body.type ?? 'text';
  if (typeof type !== 'string' || !(MESSAGE_TYPES as readonly string[]).includes(type)) {
    throw new GraphError(100, `Param type must be one of {${MESSAGE_TYPES.map((name) => name.toUpperCase()).join(', ')}}.`);
  }
  const messageType = type as MessageType;
  if (body[messageType] === undefined) throw new GraphError(131008, `The parameter ${messageType} is required.`);
  validateTypeObject(messageType, body[messageType]);

  if (body.context !== undefined) {
    if (!isObject(body.context)) throw invalid('context', 'must be an object.');
    requireString(body.context, 'message_id', 'context.');
  }
  let bizOpaqueCallbackData: string | undefined;
  if (body.biz_opaque_callback_data !== undefined) {
    bizOpaqueCallbackData = requireString(body, 'biz_opaque_callback_data', '', { max: 512, allowEmpty: true });
  }
  return { kind: 'message', to, waId, type: messageType, content: body[messageType], bizOpaqueCallbackData };
}
