import { createAutomationsModule } from '../modules/automations/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { PlatformServices } from './platform.ts';

/** What the business has done on its own: automations and their versions (runs join them here). */
export function buildAutomation(core: Core, services: Pick<PlatformServices, 'audit' | 'mail'> & Pick<MessagingServices, 'connections' | 'templates'>) {
  const { db, clock, events } = core;
  const automations = createAutomationsModule({
    db,
    clock,
    events,
    audit: services.audit,
    mail: services.mail,
    connections: services.connections,
    templates: services.templates,
  });
  return {
    modules: [automations],
    services: { automations: automations.service },
  } satisfies Area<object>;
}

export type AutomationServices = ReturnType<typeof buildAutomation>['services'];
