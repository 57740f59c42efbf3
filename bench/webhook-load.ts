/**
 * What the two webhook benches (`webhooks`, `webhooks-floor`) share: the raw undici POSTs their
 * figures are set against, and the check that every delivery arrived at the receivers.
 */
import { request, type Agent } from 'undici';
import type { BenchServer } from './lib.ts';
import type { ReceiptSummary } from './serve-receivers.ts';

/** `total` raw POSTs of `body`, `concurrency` at a time (the worker's), round-robin over `urls`; answers the milliseconds taken. */
export async function rawPosts(
  agent: Agent,
  options: { urls: string[]; total: number; concurrency: number },
  body: string,
  headers: Record<string, string>,
): Promise<number> {
  const { urls, total } = options;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (next < total) {
        const url = urls[next++ % urls.length]!;
        const response = await request(url, { method: 'POST', body, headers, dispatcher: agent });
        await response.body.text();
        if (response.statusCode !== 200) throw new Error(`baseline POST ${url}: ${response.statusCode}`);
      }
    }),
  );
  return performance.now() - started;
}

/**
 * Waits until `expected` requests have arrived at the receivers, and fails the bench when fewer did
 * within `timeoutMs`, or (`distinct`) when some (receiver, event) pair arrived twice: the baseline
 * repeats one body, the service never should.
 */
export async function arrivals(
  receivers: BenchServer,
  what: string,
  expected: number,
  options: { timeoutMs: number; distinct: boolean },
): Promise<ReceiptSummary> {
  const summary = await receivers.call<ReceiptSummary>('waitFor', { total: expected, timeoutMs: options.timeoutMs });
  if (summary.timedOut || summary.received !== expected || (options.distinct && summary.distinct !== expected)) {
    throw new Error(
      `${what}: expected ${expected} deliveries, ${summary.received} arrived (${summary.distinct} distinct)` +
        `${summary.timedOut ? ` within ${options.timeoutMs / 1000} s` : ''}; per receiver: ${summary.perReceiver.join(', ')}`,
    );
  }
  return summary;
}
