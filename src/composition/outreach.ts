import { createNotificationsModule } from '../modules/notifications/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { PlatformServices } from './platform.ts';

/** What the business sends on its own initiative: notifications, on time or not at all (the schedules that create them are built with runs, their other target). */
export function buildOutreach(
  core: Core,
  services: Pick<PlatformServices, 'audit'> & Pick<MessagingServices, 'connections' | 'contacts' | 'templates' | 'sending'>,
) {
  const { db, clock, events, queue, store } = core;
  const notifications = createNotificationsModule({
    db,
    clock,
    events,
    queue,
    audit: services.audit,
    isUniqueViolation: store.dialect.isUniqueViolation,
    connections: services.connections,
    contacts: services.contacts,
    templates: services.templates,
    sending: services.sending,
    pacer: core.provider.pacer,
  });
  return {
    modules: [notifications],
    services: { notifications: notifications.service },
  } satisfies Area<object>;
}

export type OutreachServices = ReturnType<typeof buildOutreach>['services'];
