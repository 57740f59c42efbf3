import { HOUR, type Clock } from '../../lib/clock.ts';
import type { Behaviour, SandboxNumber, Throttle } from './state.ts';

/**
 * The provider's rate limits as the sandbox applies them (§8.1, §8.4): the per-number throughput
 * ceiling on sends, the usage header every call on an account carries, and the throttle a tester
 * switches on through `behaviour.throttle`.
 */

/** Sends per second per number: 80 by default, 20 for coexistence numbers, 1000 once upgraded to HIGH. */
export const DEFAULT_MPS = { standard: 80, coexistence: 20, high: 1000 } as const;

/**
 * Management calls allowed per hour per account: 200, or 5,000 once a number of the account is
 * registered (§8.1). The sandbox reports usage against this budget but never enforces it on its
 * own; refusals come only from `behaviour.throttle`, so benchmarks are never throttled by surprise.
 */
export const MANAGEMENT_CALLS_PER_HOUR = { default: 200, registered: 5000 } as const;

/** The usage kinds of `x-business-use-case-usage` (§8.4). */
export type UsageKind = 'whatsapp_business_management' | 'whatsapp';

export interface UsageEntry {
  type: UsageKind;
  call_count: number;
  total_cputime: number;
  total_time: number;
  estimated_time_to_regain_access: number;
}

export function throughputCeiling(number: SandboxNumber, behaviour: Behaviour): number {
  if (behaviour.throughputMps !== undefined) return behaviour.throughputMps;
  if (number.coexistence) return DEFAULT_MPS.coexistence;
  return number.throughputLevel === 'HIGH' ? DEFAULT_MPS.high : DEFAULT_MPS.standard;
}

export function createLimits(options: { clock: Clock; behaviour: Behaviour; hasRegisteredNumber: (wabaId: string) => boolean }) {
  // Fixed one-second windows per number: O(1) per send even with the ceiling raised for benchmarks.
  const sends = new Map<string, { second: number; count: number }>();
  // Fixed one-hour windows per account for management calls.
  const managementCalls = new Map<string, { hour: number; count: number }>();

  function percent(used: number, budget: number): number {
    return Math.min(100, Math.round((used / budget) * 100));
  }

  function sendsThisSecond(phoneNumberId: string): number {
    const second = Math.floor(options.clock.now().getTime() / 1000);
    const window = sends.get(phoneNumberId);
    return window !== undefined && window.second === second ? window.count : 0;
  }

  return {
    /** Takes one send slot of the number's current second; false when the ceiling is reached (130429). */
    takeSend(number: SandboxNumber): boolean {
      const second = Math.floor(options.clock.now().getTime() / 1000);
      const used = sendsThisSecond(number.phoneNumberId);
      if (used >= throughputCeiling(number, options.behaviour)) return false;
      sends.set(number.phoneNumberId, { second, count: used + 1 });
      return true;
    },

    /** Counts a management call of the account. */
    recordManagementCall(wabaId: string): void {
      const hour = Math.floor(options.clock.now().getTime() / HOUR);
      const window = managementCalls.get(wabaId);
      managementCalls.set(wabaId, window !== undefined && window.hour === hour ? { hour, count: window.count + 1 } : { hour, count: 1 });
    },

    /**
     * The throttle that refuses this account's next call, if any; counts the refusal down. A throttle
     * limited to a number of calls is cleared once they are spent.
     */
    takeThrottle(wabaId: string): Throttle | undefined {
      const throttle = options.behaviour.throttle;
      if (throttle === undefined || (throttle.wabaId !== undefined && throttle.wabaId !== wabaId)) return undefined;
      if (throttle.remaining !== undefined) {
        throttle.remaining -= 1;
        if (throttle.remaining <= 0) options.behaviour.throttle = undefined;
      }
      return throttle;
    },

    /**
     * `x-business-use-case-usage` for a call on the account: percentages of the budget used (call
     * count; CPU and time are reported as a tenth of it, the sandbox's calls being cheap), or 100 and
     * the minutes to wait while throttled.
     */
    usageHeader(wabaId: string, kind: UsageKind, context: { number?: SandboxNumber; throttle?: Throttle } = {}): string {
      let callCount: number;
      if (context.throttle !== undefined) {
        callCount = 100;
      } else if (kind === 'whatsapp' && context.number !== undefined) {
        callCount = percent(sendsThisSecond(context.number.phoneNumberId), throughputCeiling(context.number, options.behaviour));
      } else {
        const hour = Math.floor(options.clock.now().getTime() / HOUR);
        const window = managementCalls.get(wabaId);
        const used = window !== undefined && window.hour === hour ? window.count : 0;
        callCount = percent(used, options.hasRegisteredNumber(wabaId) ? MANAGEMENT_CALLS_PER_HOUR.registered : MANAGEMENT_CALLS_PER_HOUR.default);
      }
      const cost = context.throttle !== undefined ? 100 : Math.ceil(callCount / 10);
      const entry: UsageEntry = {
        type: kind,
        call_count: callCount,
        total_cputime: cost,
        total_time: cost,
        estimated_time_to_regain_access: context.throttle?.regainMinutes ?? 0,
      };
      return JSON.stringify({ [wabaId]: [entry] });
    },
  };
}

export type Limits = ReturnType<typeof createLimits>;
