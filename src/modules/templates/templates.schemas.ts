import Type, { type Static } from 'typebox';
import { Discriminated, Id, ListOf, ListQuery, Nullable, Strict, Timestamp } from '../../http/schemas.ts';
import { TEMPLATE_CATEGORIES, TEMPLATE_STATUSES } from '../../provider/provider.schemas.ts';

export const PARAMETER_FORMATS = ['positional', 'named'] as const;

export const TemplateSchema = Type.Object({
  id: Id('template'),
  object: Type.Literal('template'),
  connection_id: Id('connection'),
  name: Type.String(),
  language: Type.String({ description: '`en_US`, `pt_BR`, ...: a name exists once per language.' }),
  category: Nullable(Type.Enum(TEMPLATE_CATEGORIES)),
  status: Type.Enum(TEMPLATE_STATUSES, { description: 'As the provider reviews it; only `approved` templates can be sent. `deleted` ones stay readable.' }),
  status_reason: Nullable(Type.String({ description: "The provider's reason for the last status change (a rejection, a pause)." })),
  parameter_format: Type.Enum(PARAMETER_FORMATS),
  components: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'Header, body, footer and buttons, as the provider defines them.' }),
  provider_template_id: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Template = Static<typeof TemplateSchema>;

/** Lower-case letters, digits and underscores: the provider's rule for template names. */
export const TEMPLATE_NAME_PATTERN = '^[a-z0-9_]{1,512}$';
const Name = Type.String({ pattern: TEMPLATE_NAME_PATTERN, description: 'Lower-case letters, digits and underscores (`order_ready`).' });
const Language = Type.String({ pattern: '^[a-z]{2,3}(_[A-Z]{2})?$', description: "The provider's language code: `en`, `en_US`, `pt_BR`, ..." });
const HttpsUrl = Type.String({ pattern: '^https://[^\\s]+$', maxLength: 2000 });

// ---- Creating: the components in the API's snake_case, mirroring the provider's definition.

const ButtonText = Type.String({ minLength: 1, maxLength: 25 });
const TemplateButtonInput = Discriminated('type', {
  quick_reply: Strict({ type: Type.Literal('quick_reply'), text: ButtonText }),
  url: Strict({
    type: Type.Literal('url'),
    text: ButtonText,
    url: Type.String({ pattern: '^https?://', maxLength: 2000, description: 'A `{{1}}` at the very end is completed by each send.' }),
    example: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'A full URL as sent; required when `url` ends in `{{1}}`.' })),
  }),
  phone_number: Strict({ type: Type.Literal('phone_number'), text: ButtonText, phone_number: Type.String({ pattern: '^\\+?[0-9]{6,20}$' }) }),
  copy_code: Strict({
    type: Type.Literal('copy_code'),
    example: Type.String({ minLength: 1, maxLength: 15, description: 'A sample code; each send gives the real one.' }),
  }),
  otp: Strict({ type: Type.Literal('otp'), otp_type: Type.Enum(['copy_code', 'one_tap', 'zero_tap'] as const), text: Type.Optional(ButtonText) }),
  flow: Strict({
    type: Type.Literal('flow'),
    text: ButtonText,
    flow_id: Type.Optional(Type.String({ pattern: '^[0-9]+$' })),
    flow_action: Type.Optional(Type.Enum(['navigate', 'data_exchange'] as const)),
    navigate_screen: Type.Optional(Type.String({ minLength: 1 })),
  }),
});

const TextHeader = Strict({
  type: Type.Literal('header'),
  format: Type.Literal('text'),
  text: Type.String({ minLength: 1, maxLength: 60, description: 'At most one placeholder.' }),
  example: Type.Optional(Type.String({ minLength: 1, description: "The placeholder's sample value; required when `text` has one." })),
});
const MediaHeader = Strict({
  type: Type.Literal('header'),
  format: Type.Enum(['image', 'video', 'document'] as const),
  example: Type.Optional(Type.String({ minLength: 1, description: "A sample media handle from the provider's upload API." })),
});

export const TemplateComponentInput = Discriminated('type', {
  header: Discriminated('format', {
    text: TextHeader,
    image: MediaHeader,
    video: MediaHeader,
    document: MediaHeader,
    location: Strict({ type: Type.Literal('header'), format: Type.Literal('location') }),
  }),
  body: Strict({
    type: Type.Literal('body'),
    text: Type.String({ minLength: 1, maxLength: 1024 }),
    examples: Type.Optional(
      Type.Union([
        Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Positional templates: one sample per placeholder, in order.' }),
        Type.Record(Type.String(), Type.String({ minLength: 1 }), { description: 'Named templates: a sample per placeholder name.' }),
      ]),
    ),
  }),
  footer: Strict({ type: Type.Literal('footer'), text: Type.String({ minLength: 1, maxLength: 60 }) }),
  buttons: Strict({ type: Type.Literal('buttons'), buttons: Type.Array(TemplateButtonInput, { minItems: 1, maxItems: 10 }) }),
});

export const CreateTemplateBody = Strict({
  connection_id: Id('connection', 'The connection whose business account gets the template.'),
  name: Name,
  language: Language,
  category: Type.Enum(TEMPLATE_CATEGORIES, { description: 'The provider may file the template under another category; the answer says which.' }),
  parameter_format: Type.Optional(
    Type.Enum(PARAMETER_FORMATS, { default: 'positional', description: '`positional` (`{{1}}`, the default) or `named` (`{{first_name}}`).' }),
  ),
  components: Type.Array(TemplateComponentInput, { minItems: 1, maxItems: 4, description: 'At most one header, footer and buttons component, and one body.' }),
});
export type CreateTemplateInput = Static<typeof CreateTemplateBody>;

export const TemplateListQuery = ListQuery({
  connection_id: Type.Optional(Id('connection', "Only this connection's templates.")),
  status: Type.Optional(Type.Enum(TEMPLATE_STATUSES, { description: 'Only templates with this status (`approved` for the sendable ones).' })),
  name: Type.Optional(Name),
  language: Type.Optional(Language),
  category: Type.Optional(Type.Enum(TEMPLATE_CATEGORIES)),
});
export const TemplateListSchema = ListOf(TemplateSchema);

export const SyncTemplatesBody = Strict({ connection_id: Id('connection', 'The connection whose account templates are read again.') });

export const TemplateSyncSchema = Type.Object({
  object: Type.Literal('template_sync'),
  connection_id: Id('connection'),
  total: Type.Integer({ description: 'How many templates the account has at the provider.' }),
  added: Type.Integer({ description: 'Templates recorded for the first time.' }),
  status_changed: Type.Integer({ description: 'Templates whose status moved (each a `template.status_changed`), deletions aside.' }),
  deleted: Type.Integer({ description: 'Templates the provider no longer has, now `deleted`.' }),
  synced_at: Timestamp,
});
export type TemplateSync = Static<typeof TemplateSyncSchema>;

// ---- Sending: the `template` object of a send body, checked against the stored template.

const ParameterName = Type.String({ pattern: '^[a-z_][a-z0-9_]*$', description: 'For named templates: the placeholder this value fills.' });
const ParameterText = Type.String({ minLength: 1, maxLength: 32768 });

const MediaParam = Strict(
  {
    type: Type.Enum(['image', 'video', 'document'] as const),
    media_id: Type.Optional(Id('media', 'One of your uploads.')),
    link: Type.Optional(HttpsUrl),
    filename: Type.Optional(Type.String({ minLength: 1, maxLength: 240, description: 'Documents only: the name the customer sees.' })),
  },
  { description: 'Exactly one of `media_id` and `link`.' },
);
const TemplateHeaderParam = Discriminated('type', {
  text: Strict({ type: Type.Literal('text'), text: ParameterText }),
  image: MediaParam,
  video: MediaParam,
  document: MediaParam,
  location: Strict({
    type: Type.Literal('location'),
    latitude: Type.Number({ minimum: -90, maximum: 90 }),
    longitude: Type.Number({ minimum: -180, maximum: 180 }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
  }),
});

const Fallback = Type.String({ minLength: 1, maxLength: 1024, description: 'Shown where the provider cannot format the value.' });
const TemplateBodyParam = Type.Union([
  Type.String({ minLength: 1, maxLength: 32768, description: 'A text value.' }),
  Strict({ type: Type.Literal('text'), text: ParameterText, name: Type.Optional(ParameterName) }),
  Strict({
    type: Type.Literal('currency'),
    fallback: Fallback,
    code: Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217.' }),
    amount_1000: Type.Integer({ description: 'The amount times 1000: 12.34 is 12340.' }),
    name: Type.Optional(ParameterName),
  }),
  Strict({ type: Type.Literal('date_time'), fallback: Fallback, name: Type.Optional(ParameterName) }),
]);

const ButtonIndex = Type.Integer({ minimum: 0, maximum: 9, description: "The button's 0-based position among the template's buttons." });
const TemplateButtonParam = Discriminated('type', {
  quick_reply: Strict({ index: ButtonIndex, type: Type.Literal('quick_reply'), payload: Type.String({ minLength: 1, maxLength: 1000 }) }),
  url: Strict({
    index: ButtonIndex,
    type: Type.Literal('url'),
    text: Type.String({ minLength: 1, maxLength: 2000, description: 'Completes the URL in place of its `{{1}}`.' }),
  }),
  copy_code: Strict({ index: ButtonIndex, type: Type.Literal('copy_code'), code: Type.String({ minLength: 1, maxLength: 15 }) }),
});

/** Names a template of the sending connection: its `id`, or its `name` with its `language`. */
export const TemplateReferenceProperties = {
  id: Type.Optional(Id('template', 'The template; or give `name` and `language`.')),
  name: Type.Optional(Name),
  language: Type.Optional(Language),
};

/** The values a send fills the template's placeholders with. */
export const TemplateParameterProperties = {
  header: Type.Optional(TemplateHeaderParam),
  body: Type.Optional(
    Type.Union([
      Type.Array(TemplateBodyParam, { maxItems: 100, description: 'One value per placeholder, in order (named templates: each with its `name`).' }),
      Type.Record(ParameterName, Type.String({ minLength: 1, maxLength: 32768 }), {
        additionalProperties: false,
        description: 'Named templates: `{"first_name": "Ana"}`.',
      }),
    ]),
  ),
  buttons: Type.Optional(Type.Array(TemplateButtonParam, { maxItems: 10 })),
};
export const TemplateParametersSchema = Strict(TemplateParameterProperties, { description: "The values of the template's placeholders." });
export type TemplateParameters = Static<typeof TemplateParametersSchema>;

export const TemplateSendSchema = Strict(
  { ...TemplateReferenceProperties, ...TemplateParameterProperties },
  { description: 'Exactly one of `id`, or `name` with `language`, names an approved template of the sending connection.' },
);
export type TemplateSendInput = Static<typeof TemplateSendSchema>;
