import { createConnectionsModule } from '../modules/connections/index.ts';
import { createContactsModule } from '../modules/contacts/index.ts';
import { createConversationLocksModule } from '../modules/conversation-locks/index.ts';
import { createConversationNotesModule } from '../modules/conversation-notes/index.ts';
import { createConversationsModule } from '../modules/conversations/index.ts';
import { createMediaModule } from '../modules/media/index.ts';
import { createMessagesModule } from '../modules/messages/index.ts';
import { createProviderWebhooksModule } from '../modules/provider-webhooks/index.ts';
import { createRuntimeModule } from '../modules/runtime/index.ts';
import { createTemplatesModule } from '../modules/templates/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { PlatformServices } from './platform.ts';

/**
 * Numbers and what is said through them: connections, templates, conversations and their notes
 * and locks, contacts, media, messages, the provider's webhooks and the runtime pass-through.
 */
export function buildMessaging(core: Core, platform: Pick<PlatformServices, 'audit' | 'members'>) {
  const { db, clock, events, queue, secrets, log, mediaStorage } = core;
  const { provider, inbound, graphBaseUrl, pacer } = core.provider;
  const { audit, members } = platform;
  const connections = createConnectionsModule({ db, clock, audit, events, queue, secrets, provider });
  const templates = createTemplatesModule({ db, clock, events, audit, provider, connections: connections.service });
  const conversations = createConversationsModule({ db, clock, events, queue, members });
  const notes = createConversationNotesModule({ db, clock, conversations: conversations.service });
  const locks = createConversationLocksModule({ db, clock, events, queue, conversations: conversations.service, members });
  const contacts = createContactsModule({ db, clock, events, audit, conversations: conversations.service, connections: connections.service });
  const media = createMediaModule({
    db,
    clock,
    queue,
    provider,
    audit,
    connections: connections.service,
    storage: mediaStorage,
  });
  const messages = createMessagesModule({
    db,
    commitWithRequests: core.store.commitWithRequests,
    clock,
    events,
    queue,
    log,
    provider,
    contacts: contacts.service,
    conversations: conversations.service,
    connections: connections.service,
    templates: templates.service,
    media: media.service,
    locks: locks.service,
  });
  const providerWebhooks = createProviderWebhooksModule({
    db,
    commitWithRequests: core.store.commitWithRequests,
    clock,
    queue,
    log,
    inbound,
    connections: connections.service,
    messages: messages.service,
    templates: templates.service,
  });
  const runtime = createRuntimeModule({ connections: connections.service, log, providerBaseUrl: graphBaseUrl, pacer, metrics: core.metrics });
  return {
    modules: [
      connections.withEndpoints(templates.service),
      templates,
      conversations.withEndpoints({
        contacts: (principal, ids) => contacts.service.findMany(principal, ids),
        lastMessages: (ids) => messages.service.lastOfConversations(ids),
      }),
      notes,
      locks,
      contacts,
      media,
      messages,
      providerWebhooks,
      runtime,
    ],
    services: {
      connections: connections.service,
      templates: templates.service,
      conversations: conversations.service,
      notes: notes.service,
      locks: locks.service,
      contacts: contacts.service,
      media: media.service,
      messages: messages.service,
      sending: messages.sending,
      providerWebhooks: providerWebhooks.service,
    },
  } satisfies Area<object>;
}

export type MessagingServices = ReturnType<typeof buildMessaging>['services'];
