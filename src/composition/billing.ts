import { sql } from 'kysely';
import type { Db } from '../db/connect.ts';
import { createBillingModule, type BillableUsage } from '../modules/billing/index.ts';
import { BILLED_METER } from '../modules/usage/plans.ts';
import type { Area } from './area.ts';
import type { Core } from './core.ts';
import type { PlatformServices } from './platform.ts';

/**
 * Until the usage module is wired here: the billed meter's month, read from the table it keeps
 * (`usage_periods`, 0026_usage). The usage service's `billableQuantity` replaces it.
 */
const usagePeriods: BillableUsage = {
  async billableQuantity(db: Db, organizationId: string, period: string): Promise<number> {
    const row = await db
      .selectFrom('usage_periods')
      .select(sql<number | string | null>`sum(quantity)`.as('total'))
      .where('organization_id', '=', organizationId)
      .where('period', '=', period)
      .where('meter', '=', BILLED_METER)
      .executeTakeFirst();
    return Number(row?.total ?? 0);
  },
};

/** What an organization may use and how it pays: the subscription, checkout, the portal, Stripe's webhooks and the meter report. */
export function buildBilling(core: Core, services: Pick<PlatformServices, 'audit' | 'mail' | 'members' | 'organizations'>) {
  const { db, clock, config, queue, secrets, log } = core;
  const billing = createBillingModule({
    db,
    clock,
    log,
    queue,
    secrets,
    stripe: config.stripe,
    publicBaseUrl: config.publicBaseUrl,
    organizations: services.organizations,
    members: services.members,
    audit: services.audit,
    mail: services.mail,
    usage: usagePeriods,
  });
  return { modules: [billing], services: { billing: billing.service } } satisfies Area<object>;
}

export type BillingServices = ReturnType<typeof buildBilling>['services'];
