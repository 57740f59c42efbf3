import { createUsageModule } from '../modules/usage/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';

/** What an organization uses: usage meters against its plan. */
export function buildUsage(core: Core, services: Pick<MessagingServices, 'connections' | 'templates' | 'sending' | 'media'>) {
  const { db, clock, events, log } = core;
  const usage = createUsageModule({
    db,
    clock,
    log,
    events,
    connections: services.connections,
    templates: services.templates,
    sending: services.sending,
    media: services.media,
    plans: { planOf: async () => 'free' },
  });
  return { modules: [usage], services: { usage: usage.service } } satisfies Area<object>;
}

export type UsageServices = ReturnType<typeof buildUsage>['services'];
