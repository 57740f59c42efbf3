import Stripe from 'stripe';
import type { StripeConfig } from '../../config/config.ts';
import { SECOND } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { assertNoRequestTransaction } from '../../lib/transaction-scope.ts';
import type { PlanName } from '../usage/plans.ts';
import { STRIPE_API_VERSION, type StripeBilling, type StripeSubscriptionSnapshot } from './billing-port.ts';

/** Stripe signs each webhook with its send time; older than this is refused as a possible replay. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

/** How long one call to Stripe may take; the SDK's default (80 s) would outlast a request. */
const CALL_TIMEOUT_MS = 20 * SECOND;

/** Error code Stripe answers when an idempotent create (here: a meter event's identifier) already happened. */
const ALREADY_EXISTS = 'resource_already_exists';

function unixToIso(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}

function idOf(value: string | { id: string } | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  return typeof value === 'string' ? value : value.id;
}

/** A failed call to Stripe in the API's words; Stripe's own error travels under `provider`. */
function toAppError(error: unknown, what: string): AppError {
  if (!(error instanceof Stripe.errors.StripeError)) return new AppError('provider_unavailable', `${what}: Stripe could not be reached.`, { cause: error });
  const provider = { name: 'stripe', type: error.type, code: error.code ?? null, message: error.message, request_id: error.requestId ?? null };
  if (error instanceof Stripe.errors.StripeConnectionError || error instanceof Stripe.errors.StripeAPIError || (error.statusCode ?? 0) >= 500) {
    return new AppError('provider_unavailable', `${what}: Stripe failed (${error.message}).`, { extra: { provider }, cause: error });
  }
  if (error instanceof Stripe.errors.StripeRateLimitError) {
    return new AppError('provider_throttled', `${what}: Stripe is throttling this account.`, {
      extra: { provider },
      headers: { 'retry-after': '1' },
      cause: error,
    });
  }
  return new AppError('provider_rejected', `${what}: Stripe refused (${error.message}).`, { extra: { provider }, cause: error });
}

/** Runs one call to Stripe, outside any request transaction, its failure translated. */
async function call<T>(what: string, fn: () => Promise<T>): Promise<T> {
  assertNoRequestTransaction(`Stripe (${what})`);
  try {
    return await fn();
  } catch (error) {
    throw toAppError(error, what);
  }
}

export function createStripeBilling(config: StripeConfig): StripeBilling {
  const stripe = new Stripe(config.secretKey, {
    apiVersion: STRIPE_API_VERSION,
    // The SDK's own retries wait in real time inside the caller; our callers retry instead: a job on
    // its schedule with the same identifier, a person by clicking again. Creates that must not happen
    // twice carry an idempotency key of their own.
    maxNetworkRetries: 0,
    timeout: CALL_TIMEOUT_MS,
    telemetry: false,
    appInfo: { name: 'messaging-service' },
    ...(config.api ?? {}),
  });
  const planOfPrice = new Map<string, PlanName>([
    [config.prices.pro, 'pro'],
    [config.prices.scale, 'scale'],
  ]);
  const flatPrice: Record<Exclude<PlanName, 'free'>, string> = { pro: config.prices.pro, scale: config.prices.scale };

  function snapshot(subscription: Stripe.Subscription): StripeSubscriptionSnapshot {
    const items = subscription.items.data;
    const plan = items.map((item) => planOfPrice.get(item.price.id)).find((found) => found !== undefined);
    const ends = items.map((item) => item.current_period_end).filter((end): end is number => typeof end === 'number');
    return {
      id: subscription.id,
      customerId: idOf(subscription.customer) ?? '',
      status: subscription.status,
      plan,
      currentPeriodEnd: ends.length > 0 ? unixToIso(Math.max(...ends)) : null,
      cancelAtPeriodEnd: subscription.cancel_at_period_end,
      organizationId: subscription.metadata?.organization_id,
    };
  }

  return {
    kind: 'stripe',

    createCustomer(organization) {
      return call('creating the customer', async () => {
        const customer = await stripe.customers.create(
          { name: organization.name, metadata: { organization_id: organization.id } },
          // Two clicks (or a retry after a lost answer) within Stripe's 24 h make one customer.
          { idempotencyKey: `customer:${organization.id}` },
        );
        return customer.id;
      });
    },

    checkoutUrl(input) {
      return call('creating the checkout session', async () => {
        const session = await stripe.checkout.sessions.create({
          mode: 'subscription',
          customer: input.customerId,
          client_reference_id: input.organizationId,
          // The flat monthly price, and the metered price the hourly Billing Meter events fill (no quantity: metered).
          line_items: [{ price: flatPrice[input.plan], quantity: 1 }, { price: config.prices.metered }],
          metadata: { organization_id: input.organizationId, plan: input.plan },
          subscription_data: { metadata: { organization_id: input.organizationId } },
          success_url: input.successUrl,
          cancel_url: input.cancelUrl,
        });
        if (!session.url) throw new AppError('provider_unavailable', 'Stripe answered a checkout session without a URL.');
        return session.url;
      });
    },

    portalUrl(input) {
      return call('creating the billing portal session', async () => {
        const session = await stripe.billingPortal.sessions.create({ customer: input.customerId, return_url: input.returnUrl });
        return session.url;
      });
    },

    async verifyWebhook(rawBody, signature, receivedAtMs) {
      if (signature === undefined) throw new AppError('signature_invalid', 'The Stripe-Signature header is missing.', { param: '/header/stripe-signature' });
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, signature, config.webhookSecret, WEBHOOK_TOLERANCE_SECONDS, undefined, receivedAtMs);
      } catch (error) {
        const message = error instanceof Error ? error.message : '';
        const why = message.startsWith('Timestamp outside the tolerance zone')
          ? 'The Stripe-Signature timestamp is more than 5 minutes old: a delivery that old is refused as a possible replay.'
          : message.startsWith('Unable to extract timestamp and signatures')
            ? 'The Stripe-Signature header is not of the form t=<timestamp>,v1=<signature>.'
            : message.startsWith('No signatures found')
              ? 'No v1 signature in Stripe-Signature matches the body with the webhook secret (STRIPE_WEBHOOK_SECRET).'
              : 'The body is not a Stripe event.';
        throw new AppError('signature_invalid', why, { param: '/header/stripe-signature', cause: error });
      }
      const object = (event.data as { object?: { id?: unknown } } | undefined)?.object;
      return { id: event.id, type: event.type, objectId: typeof object?.id === 'string' ? object.id : '' };
    },

    readSubscription(id) {
      return call('reading the subscription', async () => snapshot(await stripe.subscriptions.retrieve(id)));
    },

    subscriptionOfCheckout(sessionId) {
      return call('reading the checkout session', async () => idOf((await stripe.checkout.sessions.retrieve(sessionId)).subscription));
    },

    subscriptionOfInvoice(invoiceId) {
      return call('reading the invoice', async () => {
        const invoice = await stripe.invoices.retrieve(invoiceId);
        return idOf(invoice.parent?.subscription_details?.subscription);
      });
    },

    async reportUsage(event) {
      assertNoRequestTransaction('Stripe (reporting usage)');
      try {
        await stripe.billing.meterEvents.create({
          event_name: config.meterEventName,
          identifier: event.identifier,
          payload: { stripe_customer_id: event.customerId, value: String(event.value) },
          timestamp: Math.floor(event.timestamp.getTime() / 1000),
        });
        return 'accepted';
      } catch (error) {
        // Stripe keeps identifiers at least 24 hours: an event it already holds was our earlier
        // attempt, accepted before its answer was lost.
        if (error instanceof Stripe.errors.StripeInvalidRequestError && error.code === ALREADY_EXISTS) return 'duplicate';
        throw toAppError(error, 'reporting usage');
      }
    },
  };
}
