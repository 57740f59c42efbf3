import { createAutomationsModule } from '../modules/automations/index.ts';
import { createRunsModule } from '../modules/runs/index.ts';
import { createSchedulesModule } from '../modules/schedules/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { OutreachServices } from './outreach.ts';
import type { PlatformServices } from './platform.ts';

/**
 * What the business has automated: automations and their versions, the runs that execute them, and
 * schedules, whose occurrences send notifications or start runs. Runs are built on automations and
 * hand them back what deploys settle (`attachRuns`).
 */
export function buildAutomation(
  core: Core,
  services: Pick<PlatformServices, 'audit' | 'mail'> &
    Pick<MessagingServices, 'connections' | 'templates' | 'conversations' | 'contacts' | 'locks' | 'sending'> &
    Pick<OutreachServices, 'notifications'>,
) {
  const { db, clock, events, queue, log } = core;
  const automations = createAutomationsModule({
    db,
    clock,
    events,
    audit: services.audit,
    mail: services.mail,
    connections: services.connections,
    templates: services.templates,
  });
  const runs = createRunsModule({
    db,
    clock,
    events,
    queue,
    log,
    automations: automations.service,
    connections: services.connections,
    contacts: services.contacts,
    conversations: services.conversations,
    locks: services.locks,
    sending: services.sending,
  });
  const schedules = createSchedulesModule({ db, clock, queue, audit: services.audit, targets: services.notifications, runs: runs.service.scheduleTargets });
  return {
    modules: [automations, runs, schedules],
    services: { automations: automations.service, runs: runs.service, schedules: schedules.service },
  } satisfies Area<object>;
}

export type AutomationServices = ReturnType<typeof buildAutomation>['services'];
