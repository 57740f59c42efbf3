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
import type { StripeBilling } from './billing-port.ts';

/**
 * The Stripe adapter with its SDK loaded by the first call (the SDK holds about 35 MiB resident): a
 * process on the local adapter never loads it, like Redis's and the mail transport's libraries.
 */
function lazyStripeBilling(config: StripeConfig): StripeBilling {
  let adapter: Promise<StripeBilling> | undefined;
  const load = () => (adapter ??= import('./stripe-billing.ts').then((module) => module.createStripeBilling(config)));
  return {
    kind: 'stripe',
    createCustomer: async (organization) => (await load()).createCustomer(organization),
    checkoutUrl: async (input) => (await load()).checkoutUrl(input),
    portalUrl: async (input) => (await load()).portalUrl(input),
    verifyWebhook: async (rawBody, signature, receivedAtMs) => (await load()).verifyWebhook(rawBody, signature, receivedAtMs),
    readSubscription: async (id) => (await load()).readSubscription(id),
    subscriptionOfCheckout: async (sessionId) => (await load()).subscriptionOfCheckout(sessionId),
    subscriptionOfInvoice: async (invoiceId) => (await load()).subscriptionOfInvoice(invoiceId),
    reportUsage: async (event) => (await load()).reportUsage(event),
  };
}

export function createBillingModule(
  deps: Omit<BillingServiceDeps, 'store' | 'adapter'> & {
    /** Unset: the local adapter. */
    stripe: StripeConfig | undefined;
    secrets: Pick<SecretBox, 'seal' | 'open'>;
  },
): Module<BillingService> {
  const { stripe, secrets, ...serviceDeps } = deps;
  const adapter = stripe ? lazyStripeBilling(stripe) : createLocalBilling({ clock: deps.clock, secrets, publicBaseUrl: deps.publicBaseUrl });
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
export { STRIPE_API_VERSION } from './billing-port.ts';
