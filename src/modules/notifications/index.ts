/**
 * Notifications: the rail for template messages that must arrive on time or not at all (`ntf_`), one
 * at a time or in batches of up to 1,000 (`ntb_`). It owns their states, their send jobs (spaced at
 * the number's ceiling, sent through the messages module with `expires_at` as the deadline) and
 * their expiry; it follows each notification's message through the message's own events. Schedules
 * create notifications through `NotificationTargets` (notification-target.ts).
 */
import type { EventEmitter } from '../../events/emit.ts';
import type { Module } from '../module.ts';
import { notificationsJobs } from './notifications.job.ts';
import { registerNotificationsRoutes } from './notifications.routes.ts';
import { createNotificationsService, type NotificationsService, type NotificationsServiceDeps } from './notifications.service.ts';
import { createNotificationsStore } from './notifications.store.ts';

export function createNotificationsModule(
  deps: Omit<NotificationsServiceDeps, 'store' | 'events'> & { events: NotificationsServiceDeps['events'] & Pick<EventEmitter, 'subscribe'> },
): Module<NotificationsService> {
  const service = createNotificationsService({ ...deps, store: createNotificationsStore() });
  deps.events.subscribe(['message.sent', 'message.status'], service.onMessageEvent);
  return { name: 'notifications', service, routes: (server) => registerNotificationsRoutes(server, service), jobs: notificationsJobs(service) };
}

export type { NotificationsService } from './notifications.service.ts';
export type { Notification } from './notifications.schemas.ts';
export type { NotificationTarget, NotificationTargets } from './notification-target.ts';
