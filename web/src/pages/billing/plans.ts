import type { MeterName, PlanName } from '../../../../src/modules/usage/usage.schemas.ts';

/**
 * What each plan includes, for the plan picker. The service's table is `PLANS` in
 * src/modules/usage/plans.ts, which the dashboard may not import (it is not a schema file) and no
 * endpoint serves: this copy is checked against it by test/browser/organization.test.ts, which reads
 * both. The current plan's own limits also come from GET /v1/usage.
 */
export interface PlanSummary {
  name: PlanName;
  title: string;
  monthlyPriceCents: number;
  /** Monthly limits; `hard`: refused past it, otherwise warned and billed on the metered price. */
  limits: Partial<Record<MeterName, { limit: number; hard: boolean }>>;
}

const GIB = 1024 ** 3;
const soft = (limit: number) => ({ limit, hard: false });

export const PLAN_SUMMARIES: PlanSummary[] = [
  {
    name: 'free',
    title: 'Free',
    monthlyPriceCents: 0,
    limits: {
      messages_sent: { limit: 1_000, hard: true },
      notifications_sent: soft(1_000),
      automation_runs: soft(1_000),
      webhook_deliveries: soft(10_000),
      media_bytes: soft(1 * GIB),
      api_requests: soft(100_000),
    },
  },
  {
    name: 'pro',
    title: 'Pro',
    monthlyPriceCents: 4_900,
    limits: {
      messages_sent: soft(50_000),
      notifications_sent: soft(50_000),
      automation_runs: soft(50_000),
      webhook_deliveries: soft(1_000_000),
      media_bytes: soft(50 * GIB),
      api_requests: soft(5_000_000),
    },
  },
  {
    name: 'scale',
    title: 'Scale',
    monthlyPriceCents: 49_900,
    limits: {
      messages_sent: soft(1_000_000),
      notifications_sent: soft(1_000_000),
      automation_runs: soft(1_000_000),
      webhook_deliveries: soft(20_000_000),
      media_bytes: soft(1_000 * GIB),
      api_requests: soft(100_000_000),
    },
  },
];

export const planTitle = (name: PlanName) => PLAN_SUMMARIES.find((plan) => plan.name === name)?.title ?? name;
