import type {
  ContactCard,
  InteractiveContent,
  InteractiveHeader,
  MessageContent,
  OutboundMessage,
  TemplateBodyParameter,
  TemplateButtonParameter,
  TemplateHeaderParameter,
} from '../provider.ts';
import type { Json } from './json.ts';

/**
 * The port's outbound message in the provider's send payload (cloud-api-facts.md §2): camelCase
 * domain fields become the provider's snake_case objects. Optional fields the caller left out are
 * left out of the payload, never sent as null.
 */

/** Copies only the defined entries, so that absent optional fields stay absent. */
function defined(entries: Record<string, unknown>): Json {
  return Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined));
}

function mediaObject(media: { id: string } | { link: string }, extra: Record<string, unknown> = {}): Json {
  return defined({ ...media, ...extra });
}

function named(name: string | undefined): Json {
  // Named-parameter templates identify each value by its placeholder name instead of its position.
  return name === undefined ? {} : { parameter_name: name };
}

function headerParameter(parameter: TemplateHeaderParameter): Json {
  switch (parameter.type) {
    case 'text':
      return { type: 'text', text: parameter.text, ...named(parameter.name) };
    case 'image':
    case 'video':
    case 'document':
      return {
        type: parameter.type,
        [parameter.type]: mediaObject(parameter.media, { filename: parameter.type === 'document' ? parameter.filename : undefined }),
      };
    case 'location':
      return {
        type: 'location',
        location: defined({ latitude: parameter.latitude, longitude: parameter.longitude, name: parameter.name, address: parameter.address }),
      };
  }
}

function bodyParameter(parameter: TemplateBodyParameter): Json {
  switch (parameter.type) {
    case 'text':
      return { type: 'text', text: parameter.text, ...named(parameter.name) };
    case 'currency':
      return {
        type: 'currency',
        currency: { fallback_value: parameter.fallback, code: parameter.currencyCode, amount_1000: parameter.amount1000 },
        ...named(parameter.name),
      };
    case 'date_time':
      return { type: 'date_time', date_time: { fallback_value: parameter.fallback }, ...named(parameter.name) };
  }
}

function buttonComponent(parameter: TemplateButtonParameter): Json {
  // The provider's samples give the index as a string ("0"); it accepts both.
  const base = { type: 'button', sub_type: parameter.type, index: String(parameter.index) };
  switch (parameter.type) {
    case 'quick_reply':
      return { ...base, parameters: [{ type: 'payload', payload: parameter.payload }] };
    case 'url':
      return { ...base, parameters: [{ type: 'text', text: parameter.urlSuffix }] };
    case 'copy_code':
      return { ...base, parameters: [{ type: 'coupon_code', coupon_code: parameter.code }] };
  }
}

function templateObject(content: Extract<MessageContent, { type: 'template' }>): Json {
  const components: Json[] = [];
  if (content.headerParameter !== undefined) components.push({ type: 'header', parameters: [headerParameter(content.headerParameter)] });
  if (content.bodyParameters?.length) components.push({ type: 'body', parameters: content.bodyParameters.map(bodyParameter) });
  for (const button of content.buttonParameters ?? []) components.push(buttonComponent(button));
  return { name: content.name, language: { code: content.language }, ...(components.length === 0 ? {} : { components }) };
}

function interactiveHeader(header: InteractiveHeader): Json {
  if (header.type === 'text') return { type: 'text', text: header.text };
  return { type: header.type, [header.type]: mediaObject(header.media, { filename: header.type === 'document' ? header.filename : undefined }) };
}

function interactiveObject(content: InteractiveContent): Json {
  const frame = defined({
    header: content.header === undefined ? undefined : interactiveHeader(content.header),
    body: { text: content.body },
    footer: content.footer === undefined ? undefined : { text: content.footer },
  });
  switch (content.kind) {
    case 'buttons':
      return { type: 'button', ...frame, action: { buttons: content.buttons.map(({ id, title }) => ({ type: 'reply', reply: { id, title } })) } };
    case 'list':
      return {
        type: 'list',
        ...frame,
        action: {
          button: content.buttonLabel,
          sections: content.sections.map((section) =>
            defined({ title: section.title, rows: section.rows.map((row) => defined({ id: row.id, title: row.title, description: row.description })) }),
          ),
        },
      };
  }
}

const upper = (value: string | undefined): string | undefined => value?.toUpperCase();

function contactObject(card: ContactCard): Json {
  const { name } = card;
  return defined({
    name: defined({
      formatted_name: name.formattedName,
      first_name: name.firstName,
      last_name: name.lastName,
      middle_name: name.middleName,
      prefix: name.prefix,
      suffix: name.suffix,
    }),
    phones: card.phones?.map((phone) => defined({ phone: phone.phone, type: upper(phone.type), wa_id: phone.waId })),
    emails: card.emails?.map((email) => defined({ email: email.email, type: upper(email.type) })),
    addresses: card.addresses?.map((address) =>
      defined({
        street: address.street,
        city: address.city,
        state: address.state,
        zip: address.zip,
        country: address.country,
        country_code: address.countryCode,
        type: upper(address.type),
      }),
    ),
    org: card.org === undefined ? undefined : defined({ company: card.org.company, department: card.org.department, title: card.org.title }),
    urls: card.urls?.map((url) => defined({ url: url.url, type: upper(url.type) })),
    birthday: card.birthday,
  });
}

/** The object named after the message type, keyed by that type. */
function contentObject(content: MessageContent): Json {
  switch (content.type) {
    case 'text':
      return { text: defined({ body: content.text, preview_url: content.previewUrl }) };
    case 'image':
    case 'video':
    case 'audio':
    case 'document':
    case 'sticker':
      return { [content.type]: mediaObject(content.media, { caption: content.caption, filename: content.filename }) };
    case 'location':
      return { location: defined({ latitude: content.latitude, longitude: content.longitude, name: content.name, address: content.address }) };
    case 'reaction':
      return { reaction: { message_id: content.messageId, emoji: content.emoji } };
    case 'contacts':
      return { contacts: content.contacts.map(contactObject) };
    case 'interactive':
      return { interactive: interactiveObject(content.interactive) };
    case 'template':
      return { template: templateObject(content) };
  }
}

/** The whole `POST /{phone_number_id}/messages` body for one outbound message. */
export function sendPayload(message: OutboundMessage): Json {
  const { to, replyTo, callbackData, ...content } = message;
  return {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to,
    type: content.type,
    ...contentObject(content),
    ...(replyTo === undefined ? {} : { context: { message_id: replyTo } }),
    ...(callbackData === undefined ? {} : { biz_opaque_callback_data: callbackData }),
  };
}
