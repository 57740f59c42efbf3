/**
 * Webhook endpoints: where an organization's events are delivered. Owns the endpoints, their
 * signing secrets (sealed at rest, rotated with a 24-hour overlap), the delivery attempts, the
 * retry and auto-disable rules, and the SSRF-safe sender that performs each attempt.
 */
import { ALL_EVENTS, type EventEmitter } from '../../events/emit.ts';
import type { Metrics, WebhookDeliveryOutcome } from '../../lib/metrics.ts';
import type { Module } from '../module.ts';
import { webhookEndpointsJobs } from './webhook-endpoints.job.ts';
import { registerWebhookEndpointsRoutes } from './webhook-endpoints.routes.ts';
import { createWebhookEndpointsService, type WebhookEndpointsService, type WebhookEndpointsServiceDeps } from './webhook-endpoints.service.ts';
import { createWebhookEndpointsStore } from './webhook-endpoints.store.ts';
import { createWebhookSender, type SendResult } from './webhook-sender.ts';

/** The attempt's outcome as the metrics count it, from what the sender recorded (webhook-sender.ts). */
function deliveryOutcome(result: SendResult): WebhookDeliveryOutcome {
  if (result.kind === 'response') return result.status >= 200 && result.status < 300 ? 'succeeded' : 'http_error';
  if (result.error === 'timeout') return 'timeout';
  return /^(invalid_url|url_not_allowed|address_not_allowed)/.test(result.error) ? 'not_allowed' : 'network_error';
}

/** Every event of the stream, whoever emits it, becomes a delivery to each endpoint that wants it. */
export function createWebhookEndpointsModule(
  deps: Omit<WebhookEndpointsServiceDeps, 'store' | 'events' | 'transport'> & {
    events: Pick<EventEmitter, 'emit' | 'find' | 'subscribe'>;
    /** Lets endpoints sit on loopback and private addresses, over plain http (tests, local development). */
    allowPrivateNetworks: boolean;
    /** Told of every attempt the sender makes, whoever asked for it (the job, a replay, the test ping). */
    metrics: Pick<Metrics, 'webhookDelivery'>;
  },
): Module<WebhookEndpointsService> {
  const sender = createWebhookSender({ allowPrivateNetworks: deps.allowPrivateNetworks });
  const transport = {
    checkUrl: sender.checkUrl,
    async send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
      const result = await sender.send(url, body, headers);
      deps.metrics.webhookDelivery(deliveryOutcome(result), result.durationMs / 1000);
      return result;
    },
  };
  const service = createWebhookEndpointsService({ ...deps, transport, store: createWebhookEndpointsStore() });
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
