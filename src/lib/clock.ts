/**
 * Time enters the service through one interface so that every time-dependent rule (token expiry,
 * retries, windows) can be tested by moving a clock instead of sleeping.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to: for tests and benchmarks that must control time. */
export class ManualClock implements Clock {
  #ms: number;

  constructor(start: Date | string | number = Date.now()) {
    this.#ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#ms);
  }

  advance(ms: number): void {
    this.#ms += ms;
  }

  set(to: Date | string | number): void {
    this.#ms = new Date(to).getTime();
  }
}

export function isoString(date: Date): string {
  return date.toISOString();
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
