import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Metadata, MetadataPatch, Nullable, Strict, Timestamp } from '../../http/schemas.ts';

/** E.164: a `+`, a country code that does not start with 0, at most 15 digits in all. */
export const E164_PATTERN = '^\\+[1-9][0-9]{6,14}$';

export const CONSENT_TOPICS = ['marketing'] as const;
export type ConsentTopic = (typeof CONSENT_TOPICS)[number];

/** What a consent record says. */
export const CONSENT_STATUSES = ['opted_in', 'opted_out'] as const;
export type ConsentStatus = (typeof CONSENT_STATUSES)[number];

/** What a contact's summary says: a record's status, or `unknown` before any record. */
export const CONSENT_STATES = [...CONSENT_STATUSES, 'unknown'] as const;
export type ConsentState = (typeof CONSENT_STATES)[number];

const PhoneNumber = Type.String({ pattern: E164_PATTERN, description: 'E.164: `+`, country code and number, digits only (`+447700900123`).' });
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Email = Type.String({ format: 'email', maxLength: 254 });

export const TopicConsentSchema = Type.Object({
  status: Type.Enum(CONSENT_STATES, { description: 'The status of the latest record by `recorded_at`; `unknown` until one is recorded.' }),
  since: Nullable(Timestamp, { description: '`recorded_at` of the record that changed the status to this one; null while `unknown`.' }),
  source: Nullable(Type.String(), { description: '`source` of the record that changed the status to this one; null while `unknown`.' }),
});
export type TopicConsent = Static<typeof TopicConsentSchema>;

export const ContactSchema = Type.Object({
  id: Id('contact'),
  object: Type.Literal('contact'),
  phone_number: Type.String({ description: 'E.164, unique among the organization’s contacts; cannot be changed.' }),
  name: Nullable(Type.String(), { description: 'The name you gave the contact.' }),
  email: Nullable(Type.String()),
  profile_name: Nullable(Type.String({ description: 'The name the customer gave themselves, as the provider last reported it. Read-only.' })),
  consent: Type.Object(
    { marketing: TopicConsentSchema },
    { description: 'The effective consent per topic; the records behind it are at `GET /v1/contacts/{id}/consent`.' },
  ),
  metadata: Metadata,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Contact = Static<typeof ContactSchema>;

export const CreateContactBody = Strict({
  phone_number: PhoneNumber,
  name: Type.Optional(Name),
  email: Type.Optional(Email),
  metadata: Type.Optional(Metadata),
});
export type CreateContactInput = Static<typeof CreateContactBody>;

export const UpdateContactBody = Strict({
  name: Type.Optional(Nullable(Name)),
  email: Type.Optional(Nullable(Email)),
  metadata: Type.Optional(MetadataPatch),
});
export type UpdateContactInput = Static<typeof UpdateContactBody>;

export const ContactListQuery = ListQuery({
  // A `+` left unencoded in a query string arrives as a space: it is read as the `+` it was.
  phone_number: Type.Optional(
    Type.String({
      pattern: '^[+ ][1-9][0-9]{6,14}$',
      description: 'Only the contact with this E.164 number. Encode the `+` as `%2B` (an unencoded `+` arrives as a space, which is read as `+`).',
    }),
  ),
});
export const ContactListSchema = ListOf(ContactSchema);

export const RecordConsentBody = Strict({
  status: Type.Enum(CONSENT_STATUSES),
  topic: Type.Optional(
    Type.Enum(CONSENT_TOPICS, { default: 'marketing', description: 'What the consent is for; `marketing` (the default) is the only topic today.' }),
  ),
  source: Type.String({ minLength: 1, maxLength: 100, description: 'Where the consent was given: `web_form`, `keyword`, `agent`, ...' }),
  recorded_at: Type.Optional(Type.String({ format: 'date-time', description: 'When the customer gave it (ISO 8601); default now; never in the future.' })),
});
export type RecordConsentInput = Static<typeof RecordConsentBody>;

export const ContactConsentSchema = Type.Object({
  id: Id('contactConsent'),
  object: Type.Literal('contact_consent'),
  contact_id: Id('contact'),
  topic: Type.Enum(CONSENT_TOPICS),
  status: Type.Enum(CONSENT_STATUSES),
  source: Type.String(),
  recorded_at: Timestamp,
  created_at: Timestamp,
});
export type ContactConsent = Static<typeof ContactConsentSchema>;

export const ContactConsentListQuery = ListQuery();
export const ContactConsentListSchema = ListOf(ContactConsentSchema);

export const MergeContactBody = Strict({
  source_contact_id: Id('contact', 'The contact merged into this one: its messages, conversations and consent records move here, and it is deleted.'),
});
export type MergeContactInput = Static<typeof MergeContactBody>;

export const ContactWindowQuery = Strict({
  connection_id: Type.Optional(
    Id('connection', 'The number whose window to answer for; default: the one the contact last wrote to (a connection key: its own).'),
  ),
});

export const ContactWindowSchema = Type.Object({
  object: Type.Literal('window'),
  contact_id: Id('contact'),
  connection_id: Nullable(Id('connection'), {
    description: 'The number the window is with; null when none was named and the contact never wrote to one the credential sees.',
  }),
  open: Type.Boolean({ description: 'Whether free-form messages may be sent: the customer wrote here less than 24 hours ago (imported history aside).' }),
  last_inbound_at: Nullable(Timestamp, { description: "The customer's last message on this connection; null if they never wrote." }),
  expires_at: Nullable(Timestamp, { description: '`last_inbound_at` plus 24 hours: when the window closes, or closed.' }),
});
export type ContactWindow = Static<typeof ContactWindowSchema>;

/**
 * A contact's last state in the `contact.updated` that deletes it (there is no `contact.deleted`):
 * the erased contact, `deleted: true`, and the contact it was merged into, if any.
 */
export const DeletedContactSchema = Type.Object({
  ...ContactSchema.properties,
  deleted: Type.Literal(true),
  merged_into: Nullable(Id('contact')),
});
export type DeletedContact = Static<typeof DeletedContactSchema>;
