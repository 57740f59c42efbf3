import type { Config } from '../config/config.ts';
import type { Store } from '../db/connect.ts';
import type { Clock } from '../lib/clock.ts';
import type { MetricsService } from '../modules/metrics/index.ts';
import type { Module } from '../modules/module.ts';

/**
 * The metrics module when METRICS_TOKEN is set, imported only then: without the token there is no
 * `/metrics` route and prom-client is never loaded (docs/benchmarks.md#memory). It is built before
 * the core, whose provider, pacer and webhook sender report to its service.
 */
export async function buildMetrics(config: Config, store: Store, clock: Clock): Promise<Module<MetricsService> | undefined> {
  if (config.metricsToken === undefined) return undefined;
  const { createMetricsModule } = await import('../modules/metrics/index.ts');
  return createMetricsModule({ token: config.metricsToken, db: store.db, clock });
}
