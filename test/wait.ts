/** Waiting for something to happen, rather than for a while and hoping it has. */
import { setTimeout as delay } from 'node:timers/promises';

export interface WaitOptions {
  /** How long the condition has to come true, in real milliseconds. */
  timeoutMs?: number;
  /** How long to wait between looks: longer where a look is costly (a query), or competes for the CPU. */
  intervalMs?: number;
  /** What was awaited, for the failure; a function is asked only when it fails. */
  message?: string | (() => string);
}

/**
 * Resolves with the condition's first truthy answer, looking again every `intervalMs`; fails once
 * `timeoutMs` has passed without one. A condition that throws fails the wait at once.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 5000, intervalMs = 5 } = options;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const answer = await condition();
    if (answer) return answer;
    if (performance.now() > deadline) {
      const what = typeof options.message === 'function' ? options.message() : (options.message ?? String(condition));
      throw new Error(`waited ${timeoutMs} ms in vain for ${what}`);
    }
    await delay(intervalMs);
  }
}
