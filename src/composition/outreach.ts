import { createSchedulesModule } from '../modules/schedules/index.ts';
import type { NotificationTargets } from '../modules/notifications/notification-target.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { PlatformServices } from './platform.ts';

/** Messages that go out on the service's own initiative: schedules, and what their occurrences create. */
export function buildOutreach(core: Core, services: Pick<PlatformServices, 'audit'> & { targets: NotificationTargets }) {
  const { db, clock, queue } = core;
  const schedules = createSchedulesModule({ db, clock, queue, audit: services.audit, targets: services.targets });
  return { modules: [schedules], services: { schedules: schedules.service } } satisfies Area<object>;
}

export type OutreachServices = ReturnType<typeof buildOutreach>['services'];
