import { createStreamModule } from '../modules/stream/index.ts';
import { createWebhookEndpointsModule } from '../modules/webhook-endpoints/index.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { MessagingServices } from './messaging.ts';
import type { PlatformServices } from './platform.ts';
import type { BillingServices } from './billing.ts';

/** The outbound stream: webhook endpoints, a delivery for every event any module emits, and the dashboard's live stream of them. */
export function buildDelivery(
  core: Core,
  services: Pick<PlatformServices, 'audit' | 'auth' | 'mail'> & Pick<MessagingServices, 'connections'> & Pick<BillingServices, 'usage'>,
) {
  const { db, clock, config, events, queue, secrets, metrics, log } = core;
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
  const stream = createStreamModule({ db, clock, log, events, auth: services.auth });
  return { modules: [webhookEndpoints, stream], services: { webhookEndpoints: webhookEndpoints.service, stream: stream.service } } satisfies Area<object>;
}
