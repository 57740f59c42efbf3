/**
 * Webhook endpoints: where an organization's events are delivered. Owns the endpoints, their
 * signing secrets (sealed at rest, rotated with a 24-hour overlap), the delivery attempts, the
 * retry and auto-disable rules, and the SSRF-safe sender that performs each attempt.
 */
import { ALL_EVENTS, type EventEmitter } from '../../events/emit.ts';
import type { Module } from '../module.ts';
import { webhookEndpointsJobs } from './webhook-endpoints.job.ts';
import { registerWebhookEndpointsRoutes } from './webhook-endpoints.routes.ts';
import { createWebhookEndpointsService, type WebhookEndpointsService, type WebhookEndpointsServiceDeps } from './webhook-endpoints.service.ts';
import { createWebhookEndpointsStore } from './webhook-endpoints.store.ts';
import { createWebhookSender } from './webhook-sender.ts';

/** Every event of the stream, whoever emits it, becomes a delivery to each endpoint that wants it. */
export function createWebhookEndpointsModule(
  deps: Omit<WebhookEndpointsServiceDeps, 'store' | 'events' | 'transport'> & {
    events: Pick<EventEmitter, 'emit' | 'find' | 'subscribe'>;
    /** Lets endpoints sit on loopback and private addresses, over plain http (tests, local development). */
    allowPrivateNetworks: boolean;
  },
): Module<WebhookEndpointsService> {
  const sender = createWebhookSender({ allowPrivateNetworks: deps.allowPrivateNetworks });
  const service = createWebhookEndpointsService({ ...deps, transport: sender, store: createWebhookEndpointsStore() });
  deps.events.subscribe(ALL_EVENTS, service.queueDeliveries);
  return {
    name: 'webhook-endpoints',
    service,
    routes: (server) => registerWebhookEndpointsRoutes(server, service),
    jobs: webhookEndpointsJobs(service),
    close: () => sender.close(),
  };
}

export type { WebhookEndpointsService } from './webhook-endpoints.service.ts';
