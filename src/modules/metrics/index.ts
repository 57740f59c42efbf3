/**
 * Metrics: `GET /metrics` in Prometheus's text format for a scraper holding METRICS_TOKEN
 * (docs/metrics.md). Owns the registry and every metric in it: HTTP requests (measured by its own
 * hook), the job queue (read from the store at each scrape), and what the provider adapter, the
 * pacer and the webhook sender report through the `Metrics` port (lib/metrics.ts), which this
 * module's service implements. Loaded only when METRICS_TOKEN is set (composition/metrics.ts
 * imports it on demand), so that without it prom-client is never loaded.
 */
import type { Db } from '../../db/connect.ts';
import { readJobBacklog } from '../../jobs/backlog.ts';
import { JOBS } from '../../jobs/catalog.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Module } from '../module.ts';
import { registerMetricsRoutes } from './metrics.routes.ts';
import { createMetricsService, type MetricsService } from './metrics.service.ts';

export function createMetricsModule(deps: { token: string; db: Db; clock: Clock }): Module<MetricsService> {
  const service = createMetricsService({
    clock: deps.clock,
    readBacklog: (now) => readJobBacklog(deps.db, now),
    jobNames: JOBS.map((job) => job.name),
  });
  return {
    name: 'metrics',
    service,
    routes: (server) => registerMetricsRoutes(server, service, deps.token),
    close: async () => service.close(),
  };
}

export type { MetricsService } from './metrics.service.ts';
