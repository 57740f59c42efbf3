import { sql } from 'kysely';
import { compileOnce } from '../../db/compiled-query.ts';
import { HOUR, type Clock } from '../../lib/clock.ts';
import type { Behaviour, SandboxNumber, SandboxState, Throttle } from './state.ts';
import type { SandboxStore } from './store/index.ts';

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

/**
 * One call counted in the key's current fixed window (a window that has passed starts again at 1),
 * answering the count: one statement, so every process serving the sandbox counts against the same
 * window. Compiled once (db/compiled-query.ts): every Graph call counts at least once.
 */
const countInWindow = compileOnce((db: SandboxStore['db'], p: { key: string; window: number }) =>
  db
    .insertInto('sandbox_rate_windows')
    .values({ key: p.key, period: p.window, count: 1 })
    .onConflict((conflict) =>
      conflict.column('key').doUpdateSet({
        count: sql<number>`case when sandbox_rate_windows.period = excluded.period then sandbox_rate_windows.count + 1 else 1 end`,
        period: sql<number>`excluded.period`,
      }),
    )
    .returning('count'),
);

export function createLimits(options: { store: SandboxStore; clock: Clock; state: SandboxState }) {
  const { db } = options.store;

  function percent(used: number, budget: number): number {
    return Math.min(100, Math.round((used / budget) * 100));
  }

  async function count(key: string, window: number): Promise<number> {
    const row = await countInWindow.first(db, { key, window });
    if (row === undefined) throw new Error('the rate window upsert returned no row');
    return row.count;
  }

  async function counted(key: string, window: number): Promise<number> {
    const row = await db.selectFrom('sandbox_rate_windows').select(['period', 'count']).where('key', '=', key).executeTakeFirst();
    return row !== undefined && Number(row.period) === window ? row.count : 0;
  }

  const second = (): number => Math.floor(options.clock.now().getTime() / 1000);
  const hour = (): number => Math.floor(options.clock.now().getTime() / HOUR);

  return {
    /**
     * Takes one send slot of the number's current second; `allowed` is false once the ceiling is
     * reached (130429). `used` is the second's count so far, for the usage header.
     */
    async takeSend(number: SandboxNumber, behaviour: Behaviour): Promise<{ allowed: boolean; used: number }> {
      const used = await count(`send:${number.phoneNumberId}`, second());
      return { allowed: used <= throughputCeiling(number, behaviour), used };
    },

    /** Counts a management call of the account; answers the hour's count so far. */
    recordManagementCall(wabaId: string): Promise<number> {
      return count(`management:${wabaId}`, hour());
    },

    /**
     * The throttle that refuses this account's next call, if any; counts the refusal down. A throttle
     * limited to a number of calls is cleared once they are spent.
     */
    async takeThrottle(wabaId: string, behaviour: Behaviour): Promise<Throttle | undefined> {
      let throttle = behaviour.throttle;
      for (;;) {
        if (throttle === undefined || (throttle.wabaId !== undefined && throttle.wabaId !== wabaId)) return undefined;
        if (throttle.remaining === undefined) return throttle;
        const remaining = throttle.remaining - 1;
        if (await options.state.swapThrottle(throttle, remaining <= 0 ? undefined : { ...throttle, remaining })) return throttle;
        // Another call counted it down first: decide again on what it left.
        throttle = (await options.state.behaviour()).throttle;
      }
    },

    /**
     * `x-business-use-case-usage` for a call on the account: percentages of the budget used (call
     * count; CPU and time are reported as a tenth of it, the sandbox's calls being cheap), or 100 and
     * the minutes to wait while throttled. Counts the call already made are passed in, to save a read.
     */
    async usageHeader(
      wabaId: string,
      kind: UsageKind,
      context: { behaviour: Behaviour; number?: SandboxNumber; throttle?: Throttle; sends?: number; managementCalls?: number },
    ): Promise<string> {
      let callCount: number;
      if (context.throttle !== undefined) {
        callCount = 100;
      } else if (kind === 'whatsapp' && context.number !== undefined) {
        const sends = context.sends ?? (await counted(`send:${context.number.phoneNumberId}`, second()));
        callCount = percent(sends, throughputCeiling(context.number, context.behaviour));
      } else {
        const used = context.managementCalls ?? (await counted(`management:${wabaId}`, hour()));
        const budget = (await options.state.hasRegisteredNumber(wabaId)) ? MANAGEMENT_CALLS_PER_HOUR.registered : MANAGEMENT_CALLS_PER_HOUR.default;
        callCount = percent(used, budget);
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
