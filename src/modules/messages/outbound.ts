/**
 * From the API's send body to the provider port's message content. The body's content keys are in
 * the provider's snake_case; the port speaks camelCase and names media by reference until the
 * moment of sending, when our `med_` ids become the provider's own ids for the sending number.
 */
import { invalidParam } from '../../lib/errors.ts';
import type { ContactCard, InteractiveContent, InteractiveHeader, MediaKind, MediaSource, MessageContent } from '../../provider/provider.ts';
import type { MediaReference } from '../media/index.ts';
import { SENDABLE_TYPES, type SendableType, type SendMessageInput } from './messages.schemas.ts';

export type OutboundContent = MessageContent<MediaReference>;

/** What the queued send gives the provider, stored with the message (`send_request`). */
export interface SendRequest {
  content: OutboundContent;
  /** The recipient's number, digits only. */
  to: string;
  /** The provider's id of the quoted message. */
  replyTo?: string;
}

const MEDIA_KINDS: readonly string[] = ['image', 'video', 'audio', 'document', 'sticker'] satisfies MediaKind[];

export function isMediaKind(type: string): type is MediaKind {
  return MEDIA_KINDS.includes(type);
}

type MediaInput = { media_id?: string | undefined; link?: string | undefined };

/** Exactly one of `media_id` and `link`: a schema cannot say it in a way that reads well in an error. */
export function mediaReference(input: MediaInput, param: string): MediaReference {
  if (input.media_id !== undefined && input.link !== undefined) throw invalidParam(`${param}/link`, 'cannot be given with media_id', 'exclusive');
  if (input.media_id !== undefined) return { mediaId: input.media_id };
  if (input.link !== undefined) return { link: input.link };
  throw invalidParam(`${param}/media_id`, 'or link is required', 'required');
}

/** The body must carry the content of its `type`, and no other content. */
export function assertContentMatchesType(input: SendMessageInput): void {
  if (input[input.type] === undefined) throw invalidParam(`/${input.type}`, `is required when type is ${input.type}`, 'required');
  for (const other of SENDABLE_TYPES) {
    if (other !== input.type && input[other] !== undefined) throw invalidParam(`/${other}`, `cannot be sent with type ${input.type}`, 'unexpected');
  }
}

function contactCard(card: NonNullable<SendMessageInput['contacts']>[number]): ContactCard {
  return {
    name: {
      formattedName: card.name.formatted_name,
      firstName: card.name.first_name,
      lastName: card.name.last_name,
      middleName: card.name.middle_name,
      prefix: card.name.prefix,
      suffix: card.name.suffix,
    },
    phones: card.phones?.map((phone) => ({ phone: phone.phone, type: phone.type, waId: phone.wa_id })),
    emails: card.emails,
    addresses: card.addresses?.map(({ country_code: countryCode, ...address }) => ({ ...address, countryCode })),
    org: card.org,
    urls: card.urls,
    birthday: card.birthday,
  };
}

function interactive(input: NonNullable<SendMessageInput['interactive']>): InteractiveContent<MediaReference> {
  const footer = input.footer?.text;
  if (input.type === 'list') {
    return {
      kind: 'list',
      body: input.body.text,
      footer,
      buttonLabel: input.action.button,
      header: input.header,
      sections: input.action.sections,
    };
  }
  let header: InteractiveHeader<MediaReference> | undefined;
  if (input.header?.type === 'text') header = { type: 'text', text: input.header.text };
  else if (input.header?.type === 'document') {
    header = { type: 'document', media: mediaReference(input.header.document, '/interactive/header/document'), filename: input.header.document.filename };
  } else if (input.header?.type === 'image') header = { type: 'image', media: mediaReference(input.header.image, '/interactive/header/image') };
  else if (input.header?.type === 'video') header = { type: 'video', media: mediaReference(input.header.video, '/interactive/header/video') };
  return { kind: 'buttons', body: input.body.text, header, footer, buttons: input.action.buttons.map((button) => button.reply) };
}

/**
 * The port's content for every type but `template` and `reaction`, which need the store (the
 * template's definition, the reacted-to message's provider id) and are built by the service.
 */
export function simpleContent(input: SendMessageInput, type: Exclude<SendableType, 'template' | 'reaction'>): OutboundContent {
  switch (type) {
    case 'text':
      return { type, text: input.text!.body, previewUrl: input.text!.preview_url };
    case 'location':
      return { type, ...input.location! };
    case 'contacts':
      return { type, contacts: input.contacts!.map(contactCard) };
    case 'interactive':
      return { type, interactive: interactive(input.interactive!) };
    default: {
      const media = input[type] as MediaInput & { caption?: string; filename?: string };
      return { type, media: mediaReference(media, `/${type}`), caption: media.caption, filename: media.filename };
    }
  }
}

/**
 * The one place a message carries media, if any (a message has at most one): where it sits in the
 * request, and how to put the provider's source in its place at the moment of sending.
 */
export interface MediaSlot {
  reference: MediaReference;
  kind: MediaKind;
  param: string;
  filledWith(source: MediaSource): MessageContent;
}

export function mediaSlotOf(content: OutboundContent): MediaSlot | undefined {
  if (isMediaKind(content.type) && 'media' in content) {
    return { reference: content.media, kind: content.type, param: `/${content.type}/media_id`, filledWith: (media) => ({ ...content, media }) };
  }
  if (content.type === 'interactive' && content.interactive.kind === 'buttons' && content.interactive.header && 'media' in content.interactive.header) {
    const { interactive } = content;
    const header = content.interactive.header;
    return {
      reference: header.media,
      kind: header.type,
      param: `/interactive/header/${header.type}/media_id`,
      filledWith: (media) => ({ ...content, interactive: { ...interactive, header: { ...header, media } } }),
    };
  }
  if (content.type === 'template' && content.headerParameter && 'media' in content.headerParameter) {
    const header = content.headerParameter;
    return {
      reference: header.media,
      kind: header.type,
      param: '/template/header/media_id',
      filledWith: (media) => ({ ...content, headerParameter: { ...header, media } }),
    };
  }
  return undefined;
}

/** The content as the provider takes it: our media id replaced by the provider's own. */
export async function resolveMedia(content: OutboundContent, resolve: (reference: MediaReference) => Promise<MediaSource>): Promise<MessageContent> {
  const slot = mediaSlotOf(content);
  // Without media, the content's shape is the port's already.
  return slot ? slot.filledWith(await resolve(slot.reference)) : (content as MessageContent);
}
