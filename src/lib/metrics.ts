/**
 * What the service's parts report for `GET /metrics` (docs/metrics.md), as a port: the provider
 * adapter, the pacer and the webhook sender call it without knowing Prometheus, and without
 * METRICS_TOKEN they are given `NO_METRICS`, so reporting costs a call to an empty function and the
 * metrics library is never loaded. HTTP requests and the job queue are measured by the metrics
 * module itself (an onResponse hook, and a query at scrape time), not through this port.
 */

/**
 * How a provider call ended: `ok`, a `ProviderError` category (`auth`, `throttled`, `rejected`,
 * `unavailable`, `timeout`), or `error` for anything else thrown.
 */
export type ProviderCallOutcome = 'ok' | 'auth' | 'throttled' | 'rejected' | 'unavailable' | 'timeout' | 'error';

/**
 * How a webhook delivery attempt ended: `succeeded` (a 2xx answer), `http_error` (any other
 * answer), `timeout`, `network_error` (name resolution, connection, TLS, a reset), or `not_allowed`
 * (the URL or its address was refused before anything was sent).
 */
export type WebhookDeliveryOutcome = 'succeeded' | 'http_error' | 'timeout' | 'network_error' | 'not_allowed';

export interface Metrics {
  /** One call to the provider's API, each try of a paced send counted on its own; `operation` is a method of the provider port, or `runtime`. */
  providerCall(operation: string, outcome: ProviderCallOutcome, seconds: number): void;
  /** How long a paced call waited for its number's send slot (zero when one was free). */
  pacingWait(seconds: number): void;
  /** A paced call refused because its number's next free slot was further away than a call may wait. */
  pacingRefused(): void;
  /** One attempt to deliver an event to a webhook endpoint (automatic, a replay, or the test ping). */
  webhookDelivery(outcome: WebhookDeliveryOutcome, seconds: number): void;
}

export const NO_METRICS: Metrics = {
  providerCall() {},
  pacingWait() {},
  pacingRefused() {},
  webhookDelivery() {},
};
