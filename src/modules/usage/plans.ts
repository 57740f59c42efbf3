/**
 * The plans and what each allows, in one table: usage thresholds, the hard limit on sends, the
 * billing pages and docs/usage.md all read it. A plan's limits apply per calendar month (UTC).
 *
 * A `hard` limit refuses the work past it (`plan_limit_reached`, naming the meter and the plan); a
 * soft one only warns (`usage.threshold_reached` at 50, 80 and 100 %) and the excess is billed on
 * the metered price. Meters a plan does not list are unlimited on it.
 */

import { METERS, METER_NAMES, PLAN_NAMES, type MeterName, type PlanName } from './usage.schemas.ts';

export { METERS, METER_NAMES, PLAN_NAMES, type MeterName, type PlanName };

export interface PlanLimit {
  limit: number;
  hard: boolean;
}

export interface Plan {
  name: PlanName;
  title: string;
  /** The flat monthly price in US cents, before metered usage. */
  monthly_price_cents: number;
  limits: Partial<Record<MeterName, PlanLimit>>;
}

const GIB = 1024 ** 3;

export const PLANS: Record<PlanName, Plan> = {
  free: {
    name: 'free',
    title: 'Free',
    monthly_price_cents: 0,
    limits: {
      messages_sent: { limit: 1_000, hard: true },
      notifications_sent: { limit: 1_000, hard: false },
      automation_runs: { limit: 1_000, hard: false },
      webhook_deliveries: { limit: 10_000, hard: false },
      media_bytes: { limit: 1 * GIB, hard: false },
      api_requests: { limit: 100_000, hard: false },
    },
  },
  pro: {
    name: 'pro',
    title: 'Pro',
    monthly_price_cents: 4_900,
    limits: {
      messages_sent: { limit: 50_000, hard: false },
      notifications_sent: { limit: 50_000, hard: false },
      automation_runs: { limit: 50_000, hard: false },
      webhook_deliveries: { limit: 1_000_000, hard: false },
      media_bytes: { limit: 50 * GIB, hard: false },
      api_requests: { limit: 5_000_000, hard: false },
    },
  },
  scale: {
    name: 'scale',
    title: 'Scale',
    monthly_price_cents: 49_900,
    limits: {
      messages_sent: { limit: 1_000_000, hard: false },
      notifications_sent: { limit: 1_000_000, hard: false },
      automation_runs: { limit: 1_000_000, hard: false },
      webhook_deliveries: { limit: 20_000_000, hard: false },
      media_bytes: { limit: 1_000 * GIB, hard: false },
      api_requests: { limit: 100_000_000, hard: false },
    },
  },
};

/** The period a time falls in, `YYYY-MM` (UTC): limits, thresholds and the metered price all count per calendar month. */
export function periodOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** The meter billed on the metered price (Stripe's Billing Meter events): live messages sent, every category. */
export const BILLED_METER: MeterName = 'messages_sent';
