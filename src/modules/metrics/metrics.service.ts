import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { JobBacklog } from '../../jobs/backlog.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Metrics, ProviderCallOutcome, WebhookDeliveryOutcome } from '../../lib/metrics.ts';
import { createRequestTally } from './request-tally.ts';

/** The `route` of a request no route took (an unknown path or method, a malformed URL): one value for all of them. */
export const UNMATCHED_ROUTE = 'unmatched';

// From a cached read (about a millisecond) to a slow send; a request past 10 s has timed out somewhere.
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// A provider call or a webhook attempt may take up to its time-outs (10 s a phase, 20 s in all).
const OUTBOUND_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20];
// A free slot costs a turn of the event loop; a full one up to the pacer's longest wait (10 s).
const PACING_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface MetricsServiceDeps {
  clock: Clock;
  /** The job queue's backlog at `now`, read at each scrape. */
  readBacklog(now: Date): Promise<JobBacklog>;
  /** Every catalogued job: each has its series, at 0 when nothing of it waits, rather than none. */
  jobNames: readonly string[];
}

/**
 * Every metric of `GET /metrics` (docs/metrics.md). Counters and histograms are updated as things
 * happen, through the `Metrics` port and `httpRequest` (whose two families are the request tally's,
 * kept apart from prom-client for speed); the queue gauges are read from the store when a scrape
 * asks, and Node's process metrics by prom-client.
 */
export function createMetricsService(deps: MetricsServiceDeps) {
  const { clock } = deps;
  const registry = new Registry();
  // Unprefixed (`process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`): the names every Node.js
  // dashboard and alert already uses.
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const httpRequests = createRequestTally({
    requests: { name: 'messaging_http_requests_total', help: 'HTTP requests answered, by method, route pattern and status code.' },
    duration: {
      name: 'messaging_http_request_duration_seconds',
      help: 'Time from receiving a request to having sent its answer, by method and route pattern.',
    },
    buckets: HTTP_BUCKETS,
  });
  const providerCalls = new Counter({
    name: 'messaging_provider_calls_total',
    help: "Calls to the provider's API, by operation and outcome (ok, or the error's category).",
    labelNames: ['operation', 'outcome'] as const,
    registers,
  });
  const providerDuration = new Histogram({
    name: 'messaging_provider_call_duration_seconds',
    help: "Time a provider call took, from sending to the answer's end (a pacing wait not included), by operation.",
    labelNames: ['operation'] as const,
    buckets: OUTBOUND_BUCKETS,
    registers,
  });
  const pacingWaits = new Histogram({
    name: 'messaging_pacing_wait_seconds',
    help: "Time a paced provider call waited for its number's send slot.",
    buckets: PACING_BUCKETS,
    registers,
  });
  const pacingRefusals = new Counter({
    name: 'messaging_pacing_refusals_total',
    help: "Paced provider calls refused because their number's next free slot was too far away.",
    registers,
  });
  const webhookDeliveries = new Counter({
    name: 'messaging_webhook_deliveries_total',
    help: 'Webhook delivery attempts made by this process, by outcome.',
    labelNames: ['outcome'] as const,
    registers,
  });
  const webhookDuration = new Histogram({
    name: 'messaging_webhook_delivery_duration_seconds',
    help: "Time a webhook delivery attempt took, to the receiver's answer or the failure.",
    buckets: OUTBOUND_BUCKETS,
    registers,
  });
  const jobsDue = new Gauge({
    name: 'messaging_jobs_due',
    help: 'Queued jobs whose time has come, waiting for a worker (the queue depth), by job name; read from the store at each scrape.',
    labelNames: ['job_name'] as const,
    registers,
  });
  const jobsOldestDueAge = new Gauge({
    name: 'messaging_jobs_oldest_due_age_seconds',
    help: 'How long the job that has waited longest past its due time has waited, by job name (0 when none is due).',
    labelNames: ['job_name'] as const,
    registers,
  });
  const jobsRunning = new Gauge({
    name: 'messaging_jobs_running',
    help: 'Jobs claimed by a worker of any process, by job name.',
    labelNames: ['job_name'] as const,
    registers,
  });
  const backlogTruncated = new Gauge({
    name: 'messaging_jobs_backlog_truncated',
    help: 'Whether the last scrape stopped counting at its limit of due or running jobs (1: the job gauges are lower bounds).',
    registers,
  });

  async function refreshBacklog(): Promise<void> {
    const now = clock.now();
    const backlog = await deps.readBacklog(now);
    for (const gauge of [jobsDue, jobsOldestDueAge, jobsRunning]) gauge.reset();
    // A name missing from a truncated read is unknown, not idle: it gets no series rather than a 0.
    const names = backlog.complete ? new Set([...deps.jobNames, ...backlog.byName.keys()]) : backlog.byName.keys();
    for (const name of names) {
      const entry = backlog.byName.get(name);
      const labels = { job_name: name };
      jobsDue.set(labels, entry?.due ?? 0);
      jobsRunning.set(labels, entry?.running ?? 0);
      const oldest = entry?.oldestDueAt;
      jobsOldestDueAge.set(labels, oldest === undefined ? 0 : Math.max(0, (now.getTime() - Date.parse(oldest)) / 1000));
    }
    backlogTruncated.set(backlog.complete ? 0 : 1);
  }

  return {
    /** One answered request; `route` is the route's pattern (`/v1/messages/:id`) or `UNMATCHED_ROUTE`. */
    httpRequest(method: string, route: string, statusCode: number, seconds: number): void {
      httpRequests.record(method, route, statusCode, seconds);
    },

    providerCall(operation: string, outcome: ProviderCallOutcome, seconds: number): void {
      providerCalls.inc({ operation, outcome });
      providerDuration.observe({ operation }, seconds);
    },

    pacingWait(seconds: number): void {
      pacingWaits.observe(seconds);
    },

    pacingRefused(): void {
      pacingRefusals.inc();
    },

    webhookDelivery(outcome: WebhookDeliveryOutcome, seconds: number): void {
      webhookDeliveries.inc({ outcome });
      webhookDuration.observe(seconds);
    },

    /** The media type of `scrape`'s text (Prometheus's text format, version 0.0.4). */
    contentType: registry.contentType,

    /** Every metric as Prometheus's text format, the job queue read from the store now. */
    async scrape(): Promise<string> {
      await refreshBacklog();
      return `${await registry.metrics()}\n${httpRequests.render()}`;
    },

    close(): void {
      registry.clear();
    },
  } satisfies Metrics & Record<string, unknown>;
}

export type MetricsService = ReturnType<typeof createMetricsService>;
