import { createWebhookEndpointsModule } from '../modules/webhook-endpoints/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { PlatformServices } from './platform.ts';
import type { BillingServices } from './billing.ts';

/** The outbound stream: webhook endpoints, and a delivery for every event any module emits. */
export function buildDelivery(
  core: Core,
  services: Pick<PlatformServices, 'audit' | 'mail'> & Pick<MessagingServices, 'connections'> & Pick<BillingServices, 'usage'>,
) {
  const { db, clock, config, events, queue, secrets, metrics } = core;
  const webhookEndpoints = createWebhookEndpointsModule({
    db,
    clock,
    secrets,
    queue,
    events,
    allowPrivateNetworks: config.webhookAllowPrivateNetworks,
    metrics,
    audit: services.audit,
    connections: services.connections,
    mail: services.mail,
    usage: services.usage,
  });
  return { modules: [webhookEndpoints], services: { webhookEndpoints: webhookEndpoints.service } } satisfies Area<object>;
}
