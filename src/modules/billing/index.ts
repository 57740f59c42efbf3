/**
 * Billing: the organization's subscription (its plan, and who takes the payment), checkout and the
 * billing portal, behind a port with two adapters: `local` (the default: pages of this service that
 * change the plan and take no payment) and `stripe` (Customer, Checkout, Billing Portal, its
 * webhooks applied by a job that re-reads the subscription, and the hourly Billing Meter report of
 * messages sent). `planOf` is what usage limits read. docs/billing.md.
 */
import type { StripeConfig } from '../../config/config.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import type { Module } from '../module.ts';
import { billingJobs } from './billing.job.ts';
import { registerBillingRoutes } from './billing.routes.ts';
import { createBillingService, type BillingService, type BillingServiceDeps } from './billing.service.ts';
import { createBillingStore } from './billing.store.ts';
import { createLocalBilling } from './local-billing.ts';
import { createStripeBilling } from './stripe-billing.ts';

export function createBillingModule(
  deps: Omit<BillingServiceDeps, 'store' | 'adapter'> & {
    /** Unset: the local adapter. */
    stripe: StripeConfig | undefined;
    secrets: Pick<SecretBox, 'seal' | 'open'>;
  },
): Module<BillingService> {
  const { stripe, secrets, ...serviceDeps } = deps;
  const adapter = stripe ? createStripeBilling(stripe) : createLocalBilling({ clock: deps.clock, secrets, publicBaseUrl: deps.publicBaseUrl });
  const service = createBillingService({ ...serviceDeps, adapter, store: createBillingStore() });
  return {
    name: 'billing',
    service,
    routes: (server) => registerBillingRoutes(server, service, { dashboardUrl: `${deps.publicBaseUrl}/dashboard/billing` }),
    jobs: billingJobs(service),
  };
}

export type { BillableUsage, BillingService } from './billing.service.ts';
export { meterIdentifier } from './billing.service.ts';
export { STRIPE_API_VERSION } from './stripe-billing.ts';
