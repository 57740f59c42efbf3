/**
 * Usage: what an organization's live traffic used, per meter, per UTC day, number and automation,
 * and per calendar month against its plan (`plans.ts`); `GET /v1/usage` and its breakdown. It counts
 * each fact in the transaction that makes it, from the event stream (messages sent and received,
 * notifications, automation runs), from the hooks of the modules whose facts are not events (media
 * bytes kept), from the webhook fan-out, and from the HTTP layer (API requests, written once a
 * second). It holds the plan's hard limit on sends, as a guard on every send.
 */
import type { EventEmitter } from '../../events/emit.ts';
import type { MediaService } from '../media/index.ts';
import type { SendingService } from '../messages/index.ts';
import type { Module } from '../module.ts';
import { usageJobs } from './usage.job.ts';
import { registerUsageRoutes } from './usage.routes.ts';
import { createUsageService, REQUEST_FLUSH_MS, type UsageService, type UsageServiceDeps } from './usage.service.ts';
import { createUsageStore } from './usage.store.ts';

export function createUsageModule(
  deps: Omit<UsageServiceDeps, 'store' | 'events'> & {
    events: UsageServiceDeps['events'] & Pick<EventEmitter, 'subscribe'>;
    sending: Pick<SendingService, 'guardSends'>;
    media: Pick<MediaService, 'onStored'>;
  },
): Module<UsageService> {
  const service = createUsageService({ ...deps, store: createUsageStore() });
  deps.events.subscribe(['message.sent', 'message.received', 'notification.sent', 'automation.run_started'], service.onEvent);
  deps.media.onStored(async (trx, stored) => {
    if (!stored.test)
      await service.count(trx, { organizationId: stored.organizationId, connectionId: stored.connectionId, meter: 'media_bytes', quantity: stored.bytes });
  });
  deps.sending.guardSends((executor, send) => service.assertMaySend(executor, send));
  // Made here, outside any request, so that no request's transaction scope is carried into its rounds.
  const flushTimer = setInterval(() => void service.flushDueRequests(), REQUEST_FLUSH_MS);
  flushTimer.unref();
  return {
    name: 'usage',
    service,
    routes: (server) => registerUsageRoutes(server, service),
    jobs: usageJobs(service),
    close: async () => {
      clearInterval(flushTimer);
      await service.flushRequests();
    },
  };
}

export type { UsageService, UsageFact, CountedMeter } from './usage.service.ts';
export { PLANS, PLAN_NAMES, type PlanName } from './plans.ts';
