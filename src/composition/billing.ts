import { createBillingModule } from '../modules/billing/index.ts';
import { createUsageModule } from '../modules/usage/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { PlatformServices } from './platform.ts';

/**
 * What an organization uses and how it pays: usage meters against its plan, and the subscription,
 * checkout, portal, Stripe's webhooks and the hourly meter report. Usage reads the plan from billing,
 * and billing's meter report reads the billed total from usage: the one cycle of this area, closed by
 * a function that runs only after both exist.
 */
export function buildBilling(
  core: Core,
  services: Pick<PlatformServices, 'audit' | 'mail' | 'members' | 'organizations'> & Pick<MessagingServices, 'connections' | 'templates' | 'sending' | 'media'>,
) {
  const { db, clock, config, events, queue, secrets, log } = core;
  const billing: ReturnType<typeof createBillingModule> = createBillingModule({
    db,
    clock,
    log,
    queue,
    secrets,
    stripe: config.stripe,
    publicBaseUrl: config.publicBaseUrl,
    organizations: services.organizations,
    members: services.members,
    audit: services.audit,
    mail: services.mail,
    usage: { billableQuantity: (executor, organizationId, period) => usage.service.billableQuantity(executor, organizationId, period) },
  });
  const usage = createUsageModule({
    db,
    clock,
    log,
    events,
    connections: services.connections,
    templates: services.templates,
    sending: services.sending,
    media: services.media,
    plans: billing.service,
  });
  return { modules: [usage, billing], services: { usage: usage.service, billing: billing.service } } satisfies Area<object>;
}

export type BillingServices = ReturnType<typeof buildBilling>['services'];
