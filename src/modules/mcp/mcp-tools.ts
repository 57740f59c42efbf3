/**
 * The tool catalogue: task-shaped tools, each a thin composition of the services the REST routes
 * call, with its input schema built from the same TypeBox schemas (so the same strict Ajv checks
 * the same fields), the scope its routes declare, and its MCP annotations. How a tool runs (inside a
 * transaction or not, with an idempotency key or not) is declared here and carried out in
 * mcp-tool-calls.ts.
 */
import Type, { type Static, type TObject, type TProperties } from 'typebox';
import { toPageRequest } from '../../http/list-query.ts';
import { Id, Strict } from '../../http/schemas.ts';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from '../idempotency-keys/index.ts';
import type { ConnectionsService } from '../connections/index.ts';
import { ConnectionListQuery } from '../connections/connections.schemas.ts';
import type { ContactsService } from '../contacts/index.ts';
import { ContactListQuery, CreateContactBody, RecordConsentBody } from '../contacts/contacts.schemas.ts';
import type { ConversationNotesService } from '../conversation-notes/index.ts';
import { CreateNoteBody } from '../conversation-notes/conversation-notes.schemas.ts';
import type { ConversationsService } from '../conversations/index.ts';
import { embedConversationRelations, type ConversationRelations } from '../conversations/conversation-relations.ts';
import { AddTagsBody, AssignConversationBody, ConversationListQuery } from '../conversations/conversations.schemas.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import { SCOPES, type Scope } from '../credentials/scopes.schemas.ts';
import type { MessagesService, SendingService } from '../messages/index.ts';
import { SendMessageBody } from '../messages/messages.schemas.ts';
import type { NotificationsService } from '../notifications/index.ts';
import { CreateNotificationBody } from '../notifications/notifications.schemas.ts';
import type { OrganizationsService } from '../organizations/index.ts';
import { parameterSlotsOf, TemplateSendSchema, type TemplatesService } from '../templates/index.ts';
import { TemplateListQuery } from '../templates/templates.schemas.ts';
import type { UsageService } from '../usage/index.ts';
import { UsageQuery } from '../usage/usage.schemas.ts';

/** MCP's tool annotations (hints to the client about what a call does to the world). */
export interface ToolAnnotations {
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint: boolean;
}

/**
 * How a call runs, as its REST route would: `read` outside any transaction; `transaction` in one
 * transaction committed when the call succeeds (a write route); `outside` a transaction, its writes
 * committed as the service makes them, because it waits on the provider (a `waitsOnNetwork` route).
 */
export type ToolRun = 'read' | 'transaction' | 'outside';

export interface ToolDefinition<S extends TObject = TObject> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** Like a route's `config.access.scope`; null: any token (get_identity). */
  readonly scope: Scope | null;
  readonly input: S;
  readonly annotations: ToolAnnotations;
  readonly run: ToolRun;
  /** Takes `idempotency_key` (sends): the same key and input answer the first call's result. */
  readonly keyed?: boolean;
  /** The argument that holds what the REST route takes as its path `id` (where `/path/id` errors point). */
  readonly idArgument?: string;
  call(actor: Actor, input: Static<S>): Promise<unknown>;
}

const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
/** A send reaches a customer: outside this service, and never taken back. */
const SEND: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };

/** The key a client chooses so that a retried send is sent once: the Idempotency-Key header's rules, as an argument. */
export const IdempotencyKeyArgument = Type.Optional(
  Type.String({
    minLength: 1,
    maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
    pattern: '^[\\x20-\\x7e]+$',
    description:
      'Makes a retry safe: a call with the same key and the same arguments within 24 hours answers the first call’s result instead of sending again; the same key with other arguments is refused (idempotency_key_reuse).',
  }),
);

/** A list query's fields (limit, cursors, time bounds, order, filters) as tool arguments. */
function listArguments<T extends TProperties>(properties: T) {
  return Strict(properties);
}

function pageOf(input: { limit?: number; after?: string; before?: string; created_after?: string; created_before?: string; order?: 'asc' | 'desc' }) {
  const { limit, after, before, created_after, created_before, order } = input;
  return toPageRequest({ limit, after, before, created_after, created_before, order });
}

/** Defines a tool with its input's type inferred from its schema. */
function tool<S extends TObject>(definition: ToolDefinition<S>): ToolDefinition<S> {
  return definition;
}

export interface ToolServices {
  organizations: Pick<OrganizationsService, 'get'>;
  connections: Pick<ConnectionsService, 'list'>;
  templates: Pick<TemplatesService, 'list'>;
  conversations: Pick<ConversationsService, 'list' | 'get' | 'assign' | 'addTags'>;
  notes: Pick<ConversationNotesService, 'create'>;
  contacts: Pick<ContactsService, 'list' | 'get' | 'findMany' | 'create' | 'update' | 'recordConsent' | 'window'>;
  messages: Pick<MessagesService, 'get' | 'list' | 'markRead' | 'lastOfConversations'>;
  sending: Pick<SendingService, 'send'>;
  notifications: Pick<NotificationsService, 'create'>;
  usage: Pick<UsageService, 'get'>;
}

const CONTEXT_MESSAGES_DEFAULT = 20;
const CONTEXT_MESSAGES_MAX = 50;

export function createTools(services: ToolServices): readonly ToolDefinition[] {
  const { organizations, connections, templates, conversations, notes, contacts, messages, sending, notifications, usage } = services;
  const relations: ConversationRelations = {
    contacts: (principal, ids) => contacts.findMany(principal, ids),
    lastMessages: (ids) => messages.lastOfConversations(ids),
  };

  /** The contact of a conversation, or null once it was deleted (the conversation stays). */
  async function contactOf(principal: Principal, id: string) {
    return (await contacts.findMany(principal, [id])).get(id) ?? null;
  }

  const { expand: _expand, ...conversationFilters } = ConversationListQuery.properties;
  const { phone_number: _listed, ...contactListProperties } = ContactListQuery.properties;

  const tools = [
    tool({
      name: 'get_identity',
      title: 'Who am I',
      description: 'The organization this token acts for, the token itself (kind, id) and the scopes it holds: what the other tools may do.',
      scope: null,
      input: Strict({}),
      annotations: READ,
      run: 'read',
      async call({ principal }) {
        return {
          object: 'identity',
          organization: await organizations.get(principal.organizationId),
          member: null,
          credential: { kind: principal.kind, id: principal.credentialId },
          mode: principal.mode,
          connection_id: principal.connectionId,
          scopes: SCOPES.filter((scope) => principal.scopes.has(scope)),
        };
      },
    }),
    tool({
      name: 'list_connections',
      title: 'List connected numbers',
      description: 'The WhatsApp numbers of the organization (connections), newest first: their ids are what the send tools take as `connection_id`.',
      scope: 'connections:read',
      input: listArguments(ConnectionListQuery.properties),
      annotations: READ,
      run: 'read',
      async call({ principal }, input) {
        return connections.list(principal, { status: input.status }, pageOf(input));
      },
    }),
    tool({
      name: 'list_conversations',
      title: 'List conversations',
      description:
        'Conversations (one per number and customer), newest first, each with its contact and its last message embedded. Filter by state, assignee, tag, connection, contact, or whether the 24-hour window is open.',
      scope: 'messages:read',
      input: listArguments(conversationFilters),
      annotations: READ,
      run: 'read',
      async call({ principal }, input) {
        const { state, assignee, tag, connection_id: connectionId, contact_id: contactId, window } = input;
        const page = await conversations.list(principal, { state, assignee, tag, connectionId, contactId, window }, pageOf(input));
        return { ...page, data: await embedConversationRelations(principal, page.data, ['contact', 'last_message'], relations) };
      },
    }),
    tool({
      name: 'get_conversation_context',
      title: 'Read a conversation',
      description:
        'Everything needed to answer a customer: the conversation, its contact, whether the 24-hour window is open (only templates may be sent when it is not) and its last messages, oldest first.',
      scope: 'messages:read',
      input: Strict({
        conversation_id: Id('conversation'),
        messages: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: CONTEXT_MESSAGES_MAX,
            default: CONTEXT_MESSAGES_DEFAULT,
            description: `How many of the last messages to include, 1 to ${CONTEXT_MESSAGES_MAX}.`,
          }),
        ),
      }),
      annotations: READ,
      run: 'read',
      idArgument: 'conversation_id',
      async call({ principal }, input) {
        const conversation = await conversations.get(principal, input.conversation_id);
        const contact = await contactOf(principal, conversation.contact_id);
        const window = contact ? await contacts.window(principal, contact.id, conversation.connection_id) : null;
        const limit = input.messages ?? CONTEXT_MESSAGES_DEFAULT;
        const page = await messages.list(principal, { conversationId: conversation.id }, pageOf({ limit, order: 'desc' }));
        return {
          object: 'conversation_context',
          conversation,
          contact,
          window,
          messages: page.data.reverse(),
          has_earlier_messages: page.has_more,
        };
      },
    }),
    tool({
      name: 'search_contacts',
      title: 'Find contacts',
      description: 'Contacts, newest first; with `phone_number` (E.164, `+` and digits), the one contact with that number.',
      scope: 'contacts:read',
      input: listArguments({
        ...contactListProperties,
        phone_number: Type.Optional(CreateContactBody.properties.phone_number),
      }),
      annotations: READ,
      run: 'read',
      async call({ principal }, input) {
        return contacts.list(principal, { phoneNumber: input.phone_number }, pageOf(input));
      },
    }),
    tool({
      name: 'get_contact',
      title: 'Get a contact',
      description: 'One contact: number, name, email, consent and metadata.',
      scope: 'contacts:read',
      input: Strict({ contact_id: Id('contact') }),
      annotations: READ,
      run: 'read',
      idArgument: 'contact_id',
      async call({ principal }, input) {
        return contacts.get(principal, input.contact_id);
      },
    }),
    tool({
      name: 'list_templates',
      title: 'List message templates',
      description:
        'Message templates, newest first, each with `parameter_slots`: the header parameter, body placeholders and button parameters a send_template call must fill. Only `approved` templates can be sent.',
      scope: 'templates:read',
      input: listArguments(TemplateListQuery.properties),
      annotations: READ,
      run: 'read',
      async call({ principal }, input) {
        const { connection_id: connectionId, status, name, language, category } = input;
        const page = await templates.list(principal, { connectionId, status, name, language, category }, pageOf(input));
        return {
          ...page,
          data: page.data.map((template) => ({
            ...template,
            parameter_slots: parameterSlotsOf({ parameterFormat: template.parameter_format, components: template.components }),
          })),
        };
      },
    }),
    tool({
      name: 'get_message',
      title: 'Get a message',
      description: 'One message, inbound or outbound, with its status (`queued`, `sent`, `delivered`, `read`, `failed`) and error.',
      scope: 'messages:read',
      input: Strict({ message_id: Id('message') }),
      annotations: READ,
      run: 'read',
      idArgument: 'message_id',
      async call({ principal }, input) {
        return messages.get(principal, input.message_id);
      },
    }),
    tool({
      name: 'get_usage',
      title: 'Get usage',
      description: "What the organization's live traffic used in a calendar month (UTC), meter by meter, against its plan's limits.",
      scope: 'usage:read',
      input: Strict(UsageQuery.properties),
      annotations: READ,
      run: 'read',
      async call({ principal }, input) {
        return usage.get(principal, input);
      },
    }),
    tool({
      name: 'send_message',
      title: 'Send a message',
      description:
        'Sends a free-form message (text, media, location, contacts, interactive, reaction; or a template) from a number to a contact (`contact_id`) or a number (`to`). Free-form messages need the 24-hour window open; when it is closed the error lists the approved templates. Answers the message, `queued`: get_message follows its status.',
      scope: 'messages:write',
      input: Strict({ ...SendMessageBody.properties, idempotency_key: IdempotencyKeyArgument }),
      annotations: SEND,
      run: 'transaction',
      keyed: true,
      async call(actor, input) {
        return sending.send(actor, input);
      },
    }),
    tool({
      name: 'send_template',
      title: 'Send a template',
      description:
        'Sends an approved template (by `id`, or `name` and `language`) with its parameters, as list_templates describes them; templates may be sent whether or not the 24-hour window is open. Answers the message, `queued`.',
      scope: 'messages:write',
      input: Strict({
        connection_id: SendMessageBody.properties.connection_id,
        contact_id: SendMessageBody.properties.contact_id,
        to: SendMessageBody.properties.to,
        template: TemplateSendSchema,
        metadata: SendMessageBody.properties.metadata,
        idempotency_key: IdempotencyKeyArgument,
      }),
      annotations: SEND,
      run: 'transaction',
      keyed: true,
      async call(actor, input) {
        const { template, ...recipient } = input;
        return sending.send(actor, { ...recipient, type: 'template', template });
      },
    }),
    tool({
      name: 'mark_read',
      title: "Mark a customer's message read",
      description: 'Tells the customer their message was read (the blue ticks): a message they sent (inbound). Answers the message.',
      scope: 'messages:write',
      input: Strict({ message_id: Id('message') }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
      run: 'outside',
      idArgument: 'message_id',
      async call({ principal }, input) {
        return messages.markRead(principal, input.message_id);
      },
    }),
    tool({
      name: 'assign_conversation',
      title: 'Assign a conversation',
      description: 'Assigns a conversation to a member of the organization (`member_id`), or unassigns it (null), replacing any assignee.',
      scope: 'messages:write',
      input: Strict({ conversation_id: Id('conversation'), ...AssignConversationBody.properties }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      run: 'transaction',
      idArgument: 'conversation_id',
      async call({ principal }, input) {
        return conversations.assign(principal, input.conversation_id, { member_id: input.member_id });
      },
    }),
    tool({
      name: 'add_note',
      title: 'Add an internal note',
      description: 'Adds a note to a conversation for the team; never sent to the customer.',
      scope: 'messages:write',
      input: Strict({ conversation_id: Id('conversation'), ...CreateNoteBody.properties }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      run: 'transaction',
      idArgument: 'conversation_id',
      async call({ principal }, input) {
        const { conversation_id: conversationId, ...note } = input;
        return notes.create(principal, conversationId, note);
      },
    }),
    tool({
      name: 'tag_conversation',
      title: 'Tag a conversation',
      description: 'Adds tags to a conversation; tags it has already are kept once.',
      scope: 'messages:write',
      input: Strict({ conversation_id: Id('conversation'), ...AddTagsBody.properties }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      run: 'transaction',
      idArgument: 'conversation_id',
      async call({ principal }, input) {
        return conversations.addTags(principal, input.conversation_id, { tags: input.tags });
      },
    }),
    tool({
      name: 'upsert_contact',
      title: 'Create or update a contact',
      description:
        'The contact with this number: created when there is none, otherwise its name and email replaced by those given and `metadata` merged (a key set to null is removed).',
      scope: 'contacts:write',
      input: Strict(CreateContactBody.properties),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      run: 'transaction',
      async call(actor, input) {
        const { phone_number: phoneNumber, ...fields } = input;
        const [existing] = (await contacts.list(actor.principal, { phoneNumber }, pageOf({ limit: 1 }))).data;
        return existing ? contacts.update(actor, existing.id, fields) : contacts.create(actor, input);
      },
    }),
    tool({
      name: 'record_consent',
      title: "Record a contact's consent",
      description:
        'Records an opt-in or opt-out (marketing), with where it was given; every record is kept. Marketing templates are refused to a contact who opted out.',
      scope: 'contacts:write',
      input: Strict({ contact_id: Id('contact'), ...RecordConsentBody.properties }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      run: 'transaction',
      idArgument: 'contact_id',
      async call(actor, input) {
        const { contact_id: contactId, ...consent } = input;
        return contacts.recordConsent(actor, contactId, consent);
      },
    }),
    tool({
      name: 'send_notification',
      title: 'Send a notification',
      description:
        'A template that must arrive on time or not at all: sent at `send_at` (default now) through the number’s pacing, or ended `expired` at `expires_at`. A `dedupe_key` held by a notification of the last 24 hours answers that one.',
      scope: 'notifications:write',
      input: Strict({ ...CreateNotificationBody.properties, idempotency_key: IdempotencyKeyArgument }),
      annotations: SEND,
      run: 'transaction',
      keyed: true,
      async call(actor, input) {
        return (await notifications.create(actor, input)).notification;
      },
    }),
  ];
  return tools;
}
