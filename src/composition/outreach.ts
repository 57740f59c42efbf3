import { createNotificationsModule } from '../modules/notifications/index.ts';
import { createSchedulesModule } from '../modules/schedules/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { PlatformServices } from './platform.ts';

/** What the business sends on its own initiative: notifications, on time or not at all, and the schedules that create them. */
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
  const schedules = createSchedulesModule({ db, clock, queue, audit: services.audit, targets: notifications.service });
  return {
    modules: [notifications, schedules],
    services: { notifications: notifications.service, schedules: schedules.service },
  } satisfies Area<object>;
}

export type OutreachServices = ReturnType<typeof buildOutreach>['services'];
