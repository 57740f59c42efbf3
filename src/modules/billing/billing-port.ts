/**
 * The billing port: what the billing service needs of whoever takes the payment. Two adapters, like
 * the provider's: `local` (local-billing.ts, the default: no payment, the plan changes on pages this
 * service serves) and `stripe` (stripe-billing.ts, on the official SDK). Their shapes differ because
 * their flows do: locally the service itself is the checkout; with Stripe the plan changes only
 * when Stripe says so, by webhook.
 */
import type { PlanName } from '../usage/plans.ts';

/** What a local page's token proves: who started the checkout (or portal) session, for what, until when. */
export interface LocalSession {
  kind: 'checkout' | 'portal';
  organizationId: string;
  /** The member whose dashboard session asked, and that session (`ses_…`): the audit entry's actor. */
  memberId: string;
  credentialId: string;
  /** The plan to buy (checkout); unset for the portal, where the person picks one. */
  plan: PlanName | undefined;
  expiresAt: string;
}

export interface LocalBilling {
  readonly kind: 'local';
  /** The page's URL, carrying `session` sealed (and so unforgeable), valid `LOCAL_SESSION_TTL_MS`. */
  sessionUrl(session: Omit<LocalSession, 'expiresAt'>): string;
  /** The session a page's token carries; `credential_invalid` when it is not one, `credential_expired` past its time. */
  openSession(token: string): LocalSession;
}

/** A subscription as Stripe has it now, in our words. */
export interface StripeSubscriptionSnapshot {
  id: string;
  customerId: string;
  /** Stripe's status, as it is. */
  status: string;
  /** The plan of its flat price; undefined when no item carries one of the configured prices. */
  plan: PlanName | undefined;
  /** ISO 8601; the latest end among its items (null when it has none). */
  currentPeriodEnd: string | null;
  cancelAtPeriodEnd: boolean;
  /** `metadata.organization_id`, set at checkout. */
  organizationId: string | undefined;
}

/** A verified webhook event: only what the job needs to find what to re-read. */
export interface StripeEventHeader {
  id: string;
  type: string;
  /** The id of `data.object` (a checkout session, a subscription, an invoice). */
  objectId: string;
}

export interface StripeBilling {
  readonly kind: 'stripe';
  /** A Customer for the organization (`metadata.organization_id`); the same one for the same organization within 24 h (idempotency key). */
  createCustomer(organization: { id: string; name: string }): Promise<string>;
  checkoutUrl(input: { customerId: string; organizationId: string; plan: Exclude<PlanName, 'free'>; successUrl: string; cancelUrl: string }): Promise<string>;
  portalUrl(input: { customerId: string; returnUrl: string }): Promise<string>;
  /** Checks `Stripe-Signature` over the exact bytes, at most 5 minutes old at `receivedAtMs`; throws `signature_invalid` saying why. */
  verifyWebhook(rawBody: Buffer, signature: string | undefined, receivedAtMs: number): Promise<StripeEventHeader>;
  readSubscription(id: string): Promise<StripeSubscriptionSnapshot>;
  /** The subscription a checkout session created (unset until it is complete). */
  subscriptionOfCheckout(sessionId: string): Promise<string | undefined>;
  /** The subscription an invoice bills (unset for a one-off invoice). */
  subscriptionOfInvoice(invoiceId: string): Promise<string | undefined>;
  /**
   * One Billing Meter event. `duplicate`: Stripe already holds an event with this identifier (an
   * earlier attempt was accepted but its answer lost), which counts as reported.
   */
  reportUsage(event: { customerId: string; identifier: string; value: number; timestamp: Date }): Promise<'accepted' | 'duplicate'>;
}

export type BillingAdapter = LocalBilling | StripeBilling;

/**
 * The API version this adapter speaks, pinned: the SDK's default moves with the SDK, and the shapes
 * read here (a subscription's period on its items, an invoice's subscription under `parent`) are
 * this version's.
 */
export const STRIPE_API_VERSION = '2026-10-28.endive' as const;
