import { createAutomationsModule } from '../modules/automations/index.ts';
import { createRunsModule } from '../modules/runs/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { PlatformServices } from './platform.ts';

/**
 * What the business has automated: automations and their versions, and the runs that execute them.
 * Runs are built on automations and hand them back what deploys settle (`attachRuns`).
 */
export function buildAutomation(
  core: Core,
  services: Pick<PlatformServices, 'audit' | 'mail'> &
    Pick<MessagingServices, 'connections' | 'templates' | 'conversations' | 'contacts' | 'locks' | 'sending'>,
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
  return {
    modules: [automations, runs],
    services: { automations: automations.service, runs: runs.service },
  } satisfies Area<object>;
}

export type AutomationServices = ReturnType<typeof buildAutomation>['services'];
