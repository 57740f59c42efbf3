/**
 * Webhook endpoints: where an organization's events are delivered. Owns the endpoints, their
 * signing secrets (sealed at rest, rotated with a 24-hour overlap), the delivery attempts, the
 * retry and auto-disable rules, and the SSRF-safe sender that performs each attempt.
 */
import type { Worker } from '../../jobs/worker.ts';
import type { HttpServer } from '../../http/server.ts';
import { registerWebhookEndpointsJobs } from './webhook-endpoints.job.ts';
import { registerWebhookEndpointsRoutes } from './webhook-endpoints.routes.ts';
import { createWebhookEndpointsService, type WebhookEndpointsServiceDeps } from './webhook-endpoints.service.ts';
import { createWebhookEndpointsStore } from './webhook-endpoints.store.ts';

export function createWebhookEndpointsModule(deps: Omit<WebhookEndpointsServiceDeps, 'store'>) {
  const service = createWebhookEndpointsService({ ...deps, store: createWebhookEndpointsStore() });
  return {
    service,
    registerRoutes: (app: HttpServer) => registerWebhookEndpointsRoutes(app, service),
    registerJobs: (worker: Worker) => registerWebhookEndpointsJobs(worker, service),
  };
}

export type { WebhookEndpointsService } from './webhook-endpoints.service.ts';
