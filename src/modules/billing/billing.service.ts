import type { Db, Trx } from '../../db/connect.ts';
import type { BillingMeterReportsTable, BillingSubscriptionsTable } from '../../db/schema.ts';
import { billingStripeEvent } from '../../jobs/catalog.ts';
import { JobError } from '../../jobs/job.ts';
import type { Queue } from '../../jobs/queue.ts';
import type { JobContext } from '../../jobs/worker.ts';
import { HOUR, SECOND, type Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { Log } from '../../lib/log.ts';
import { RecentReads } from '../../lib/recent-reads.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import type { MailService } from '../mail/index.ts';
import type { MembersService } from '../members/index.ts';
import type { OrganizationsService } from '../organizations/index.ts';
import { PLANS, PLAN_NAMES, periodOf, type Plan, type PlanName } from '../usage/plans.ts';
import type { BillingAdapter, LocalSession, StripeBilling, StripeSubscriptionSnapshot } from './billing-port.ts';
import { SUBSCRIPTION_STATUSES, type BillingSession, type CheckoutInput, type Subscription } from './billing.schemas.ts';
import type { BillingStore } from './billing.store.ts';

/** What the usage module answers: live messages sent (every category) in a UTC month `YYYY-MM`. */
export interface BillableUsage {
  billableQuantity(db: Db, organizationId: string, period: string): Promise<number>;
}

/** Stripe statuses under which the plan is kept and usage billed (`past_due`: Stripe is still retrying the payment). */
const LIVE_STATUSES: readonly string[] = ['active', 'trialing', 'past_due'];

/** The events the webhook keeps; every other type is answered 2xx and dropped. */
const HANDLED_EVENTS = new Set([
  'checkout.session.completed',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'invoice.paid',
  'invoice.payment_failed',
]);

/** `planOf` runs on every counted fact: remembered a second, forgotten at once on a change here. */
export const PLAN_CACHE_TTL_MS = 1000;
const PLAN_CACHE_MAX = 10_000;

type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

function statusOf(stripeStatus: string): SubscriptionStatus {
  if (stripeStatus === 'incomplete_expired') return 'canceled';
  return (SUBSCRIPTION_STATUSES as readonly string[]).includes(stripeStatus) ? (stripeStatus as SubscriptionStatus) : 'incomplete';
}

function toSubscription(row: BillingSubscriptionsTable | undefined): Subscription {
  if (!row) return { object: 'subscription', plan: 'free', status: 'active', current_period_end: null, cancel_at_period_end: false, provider: 'local' };
  return {
    object: 'subscription',
    plan: row.plan as PlanName,
    status: row.status as SubscriptionStatus,
    current_period_end: row.current_period_end,
    cancel_at_period_end: row.cancel_at_period_end === 1,
    provider: row.provider as Subscription['provider'],
  };
}

/** The start of the last hour of the month before `period`. */
function lastHourBefore(period: string): Date {
  return new Date(new Date(`${period}-01T00:00:00.000Z`).getTime() - HOUR);
}

/** A Billing Meter event's identifier: one per organization and hour, the same on every retry. */
export function meterIdentifier(organizationId: string, hour: Date): string {
  return `${organizationId}:${hour.toISOString()}`;
}

export interface BillingServiceDeps {
  db: Db;
  store: BillingStore;
  clock: Clock;
  log: Log;
  adapter: BillingAdapter;
  queue: Pick<Queue, 'enqueue'>;
  organizations: Pick<OrganizationsService, 'get'>;
  members: Pick<MembersService, 'find'>;
  audit: Pick<AuditEventsService, 'record'>;
  mail: Pick<MailService, 'notifyOwners'>;
  usage: BillableUsage;
  publicBaseUrl: string;
}

export function createBillingService(deps: BillingServiceDeps) {
  const { db, store, clock, log, adapter, queue, organizations, members, audit, mail, usage, publicBaseUrl } = deps;
  const recent = new RecentReads<{ plan: PlanName }>({ clock, ttlMs: PLAN_CACHE_TTL_MS, maxEntries: PLAN_CACHE_MAX });
  const dashboardBilling = `${publicBaseUrl}/dashboard/billing`;

  function stripeOnly(): StripeBilling {
    if (adapter.kind !== 'stripe') throw new Error('the Stripe billing adapter is not configured');
    return adapter;
  }

  function localOnly() {
    if (adapter.kind !== 'local') throw new Error('the local billing adapter is not in use');
    return adapter;
  }

  function memberOf(actor: Actor): string {
    if (!actor.principal.memberId) throw new AppError('credential_kind_not_allowed', 'Billing is managed with a dashboard token.');
    return actor.principal.memberId;
  }

  /** The organization's Stripe customer, created on first need. */
  async function ensureCustomer(stripe: StripeBilling, organizationId: string): Promise<string> {
    const row = await store.findSubscription(db, organizationId);
    if (row?.stripe_customer_id) return row.stripe_customer_id;
    const organization = await organizations.get(organizationId);
    const customerId = await stripe.createCustomer({ id: organization.id, name: organization.name });
    const now = clock.now().toISOString();
    const claimed = await db.transaction().execute((trx) =>
      store.claimCustomer(trx, {
        organization_id: organizationId,
        plan: 'free',
        status: 'active',
        provider: 'local',
        stripe_customer_id: customerId,
        stripe_subscription_id: null,
        current_period_end: null,
        cancel_at_period_end: 0,
        created_at: now,
        updated_at: now,
      }),
    );
    return claimed ?? customerId;
  }

  /** Writes the organization's subscription and its audit entry, in the caller's transaction; forgets the remembered plan. */
  async function writeSubscription(
    trx: Trx,
    by: Actor | { system: true; organizationId: string },
    organizationId: string,
    next: Omit<BillingSubscriptionsTable, 'organization_id' | 'created_at' | 'updated_at'>,
  ): Promise<void> {
    const before = toSubscription(await store.findSubscription(trx, organizationId));
    const now = clock.now().toISOString();
    await store.upsertSubscription(trx, { organization_id: organizationId, ...next, created_at: now, updated_at: now }, { ...next, updated_at: now });
    recent.forget(organizationId);
    if (before.plan === next.plan && before.status === next.status && before.provider === next.provider) return;
    await audit.record(trx, by, {
      action: 'subscription.updated',
      target: { type: 'subscription', id: organizationId },
      data: { plan: { from: before.plan, to: next.plan }, status: { from: before.status, to: next.status }, provider: next.provider },
    });
  }

  /**
   * Mirrors a subscription as Stripe has it now. Re-read rather than taken from the event, so events
   * in any order end in Stripe's current state; one about a subscription the organization has since
   * replaced is ignored unless that subscription is live again.
   */
  async function applySnapshot(trx: Trx, snapshot: StripeSubscriptionSnapshot): Promise<string | undefined> {
    const row =
      (await store.findSubscriptionByCustomer(trx, snapshot.customerId)) ??
      (snapshot.organizationId === undefined ? undefined : await store.findSubscription(trx, snapshot.organizationId));
    if (!row) {
      log.warn({ stripe_subscription_id: snapshot.id, stripe_customer_id: snapshot.customerId }, 'Stripe subscription of no organization here; ignored');
      return undefined;
    }
    const organizationId = row.organization_id;
    const live = LIVE_STATUSES.includes(snapshot.status);
    if (!live && row.stripe_subscription_id !== null && row.stripe_subscription_id !== snapshot.id) {
      log.info({ organization_id: organizationId, stripe_subscription_id: snapshot.id }, 'event about a replaced Stripe subscription; ignored');
      return organizationId;
    }
    if (live && snapshot.plan === undefined)
      log.warn({ stripe_subscription_id: snapshot.id }, 'Stripe subscription with none of the configured prices; kept on free');
    await writeSubscription(trx, { system: true, organizationId }, organizationId, {
      plan: live ? (snapshot.plan ?? 'free') : 'free',
      status: statusOf(snapshot.status),
      provider: 'stripe',
      stripe_customer_id: snapshot.customerId,
      stripe_subscription_id: snapshot.id,
      current_period_end: live ? snapshot.currentPeriodEnd : null,
      cancel_at_period_end: live && snapshot.cancelAtPeriodEnd ? 1 : 0,
    });
    return organizationId;
  }

  /** The subscription a handled event concerns, read from Stripe (events carry ids; their order is not Stripe's). */
  async function subscriptionOfEvent(stripe: StripeBilling, type: string, objectId: string): Promise<string | undefined> {
    if (type === 'checkout.session.completed') return stripe.subscriptionOfCheckout(objectId);
    if (type.startsWith('invoice.')) return stripe.subscriptionOfInvoice(objectId);
    return objectId;
  }

  /** Freezes the quantity of one organization's hour, unless it is frozen already or nothing is owed. */
  async function freeze(organizationId: string, customerId: string, hour: Date): Promise<BillingMeterReportsTable | undefined> {
    return db.transaction().execute(async (trx) => {
      const existing = await store.findReport(trx, organizationId, hour.toISOString());
      if (existing) return existing;
      const period = periodOf(hour);
      const quantity = (await usage.billableQuantity(trx, organizationId, period)) - (await store.frozenQuantity(trx, organizationId, period));
      if (quantity <= 0) return undefined;
      const row: BillingMeterReportsTable = {
        organization_id: organizationId,
        hour: hour.toISOString(),
        period,
        identifier: meterIdentifier(organizationId, hour),
        stripe_customer_id: customerId,
        quantity,
        status: 'pending',
        created_at: clock.now().toISOString(),
        reported_at: null,
      };
      await store.insertReport(trx, row);
      return row;
    });
  }

  /** Sends a frozen report as it was frozen, then marks it reported. */
  async function send(stripe: StripeBilling, report: BillingMeterReportsTable): Promise<void> {
    // The event's time is the hour's last second, so Stripe bills it in the period it was used in.
    const timestamp = new Date(new Date(report.hour).getTime() + HOUR - SECOND);
    const outcome = await stripe.reportUsage({ customerId: report.stripe_customer_id, identifier: report.identifier, value: report.quantity, timestamp });
    if (outcome === 'duplicate') log.info({ identifier: report.identifier }, 'Stripe already had this meter event (an earlier attempt); marked reported');
    await store.markReported(db, report.organization_id, report.hour, clock.now().toISOString());
  }

  async function reportOrganization(stripe: StripeBilling, organizationId: string, customerId: string, hour: Date): Promise<void> {
    for (const pending of await store.listPendingReports(db, organizationId)) await send(stripe, pending);
    // A month whose last hour no run reported (no worker at midnight) is closed now, if it was billed at all.
    const period = periodOf(hour);
    const closing = lastHourBefore(period);
    if (hour.getTime() !== closing.getTime() && (await store.frozenQuantity(db, organizationId, periodOf(closing))) > 0) {
      const last = await freeze(organizationId, customerId, closing);
      if (last?.status === 'pending') await send(stripe, last);
    }
    const report = await freeze(organizationId, customerId, hour);
    if (report?.status === 'pending') await send(stripe, report);
  }

  const service = {
    adapterKind: adapter.kind,

    /** The organization's plan, possibly a second old when another process changed it. */
    async planOf(executor: Db, organizationId: string): Promise<PlanName> {
      const found = await recent.read(
        organizationId,
        async () => {
          const row = await store.findSubscription(executor, organizationId);
          return { plan: (row?.plan ?? 'free') as PlanName };
        },
        () => [organizationId],
      );
      return found.plan;
    },

    async getSubscription(organizationId: string): Promise<Subscription> {
      return toSubscription(await store.findSubscription(db, organizationId));
    },

    /** Where to buy `plan`: Stripe Checkout, or the local page that takes no payment. */
    async checkout(actor: Actor, input: CheckoutInput): Promise<BillingSession> {
      const organizationId = actor.principal.organizationId;
      const memberId = memberOf(actor);
      if (adapter.kind === 'local') {
        return {
          object: 'billing_session',
          url: adapter.sessionUrl({ kind: 'checkout', organizationId, memberId, credentialId: actor.principal.credentialId, plan: input.plan }),
        };
      }
      const row = await store.findSubscription(db, organizationId);
      if (row?.provider === 'stripe' && row.stripe_subscription_id && LIVE_STATUSES.includes(row.status)) {
        throw new AppError(
          'invalid_state',
          `The organization already pays for ${PLANS[row.plan as PlanName].title} at Stripe: change or cancel it in the billing portal (POST /v1/billing/portal).`,
        );
      }
      const customerId = await ensureCustomer(adapter, organizationId);
      const url = await adapter.checkoutUrl({
        customerId,
        organizationId,
        plan: input.plan,
        successUrl: `${dashboardBilling}?checkout=success`,
        cancelUrl: `${dashboardBilling}?checkout=canceled`,
      });
      return { object: 'billing_session', url };
    },

    /** Where to change or cancel the plan: Stripe's Billing Portal, or the local page. */
    async portal(actor: Actor): Promise<BillingSession> {
      const organizationId = actor.principal.organizationId;
      const memberId = memberOf(actor);
      if (adapter.kind === 'local') {
        return {
          object: 'billing_session',
          url: adapter.sessionUrl({ kind: 'portal', organizationId, memberId, credentialId: actor.principal.credentialId, plan: undefined }),
        };
      }
      const customerId = await ensureCustomer(adapter, organizationId);
      return { object: 'billing_session', url: await adapter.portalUrl({ customerId, returnUrl: dashboardBilling }) };
    },

    /** What a local page shows: the session its link carries, the plan now, and the plans. */
    async localPage(kind: LocalSession['kind'], token: string): Promise<{ session: LocalSession; current: Plan; plans: Plan[] }> {
      const session = localOnly().openSession(token);
      if (session.kind !== kind)
        throw new AppError('credential_invalid', `This link opens the local ${session.kind} page, not the ${kind} page.`, { param: '/path/token' });
      const current = toSubscription(await store.findSubscription(db, session.organizationId));
      return { session, current: PLANS[current.plan], plans: PLAN_NAMES.map((name) => PLANS[name]) };
    },

    /**
     * A local page's form: the plan changes at once, no payment taken, with an audit entry under the
     * member and dashboard session that opened the page, who must still be an owner or admin.
     */
    async completeLocal(kind: LocalSession['kind'], token: string, plan: PlanName, requestId: string): Promise<{ from: Plan; to: Plan }> {
      const { session } = await service.localPage(kind, token);
      if (kind === 'checkout' && plan !== session.plan) {
        throw new AppError('validation_failed', `This checkout is for ${session.plan}; /plan must be that.`, {
          param: '/plan',
          details: [{ param: '/plan', code: 'invalid_value', message: `must be ${session.plan}` }],
        });
      }
      return db.transaction().execute(async (trx) => {
        const member = await members.find(session.organizationId, session.memberId, trx);
        if (!member || (member.role !== 'owner' && member.role !== 'admin')) {
          throw new AppError('role_insufficient', 'The member who opened this billing page is no longer an owner or admin of the organization.', {
            extra: { allowed_roles: ['owner', 'admin'] },
          });
        }
        const principal: Principal = {
          kind: 'dashboard_token',
          credentialId: session.credentialId,
          organizationId: session.organizationId,
          memberId: session.memberId,
          role: member.role,
          mode: null,
          connectionId: null,
          scopes: new Set(),
        };
        const before = toSubscription(await store.findSubscription(trx, session.organizationId));
        await writeSubscription(trx, { principal, requestId }, session.organizationId, {
          plan,
          status: 'active',
          provider: 'local',
          stripe_customer_id: null,
          stripe_subscription_id: null,
          current_period_end: null,
          cancel_at_period_end: 0,
        });
        return { from: PLANS[before.plan], to: PLANS[plan] };
      });
    },

    /**
     * A webhook from Stripe: verified over the exact bytes, then, for the types handled, its id kept
     * once and its job queued in one transaction. Answers whether it was new; other types are
     * answered and forgotten.
     */
    async receiveStripeEvent(rawBody: Buffer, signature: string | undefined): Promise<{ received: 'new' | 'duplicate' | 'ignored' }> {
      const stripe = stripeOnly();
      const event = await stripe.verifyWebhook(rawBody, signature, clock.now().getTime());
      if (!HANDLED_EVENTS.has(event.type) || event.objectId === '') return { received: 'ignored' };
      const fresh = await db.transaction().execute(async (trx) => {
        const inserted = await store.insertEventIfAbsent(trx, {
          id: event.id,
          type: event.type,
          object_id: event.objectId,
          received_at: clock.now().toISOString(),
          processed_at: null,
        });
        if (inserted) await queue.enqueue(trx, billingStripeEvent, { event_id: event.id });
        return inserted;
      });
      return { received: fresh ? 'new' : 'duplicate' };
    },

    /**
     * The `billing.stripe_event` job: re-reads the subscription the event concerns from Stripe and
     * mirrors it, marks the event processed and, for a failed payment, mails the owner, all in the
     * job's settle transaction: done once, or not at all.
     */
    async processStripeEvent(eventId: string, context: Pick<JobContext, 'inSettle'>): Promise<void> {
      const stripe = stripeOnly();
      const event = await store.findEvent(db, eventId);
      if (!event || event.processed_at !== null) return;
      const subscriptionId = await subscriptionOfEvent(stripe, event.type, event.object_id);
      const snapshot = subscriptionId === undefined ? undefined : await stripe.readSubscription(subscriptionId);
      context.inSettle(async (trx) => {
        const organizationId = snapshot && (await applySnapshot(trx, snapshot));
        if (organizationId && event.type === 'invoice.payment_failed') {
          const plan = PLANS[toSubscription(await store.findSubscription(trx, organizationId)).plan];
          await mail.notifyOwners(trx, organizationId, {
            subject: `Payment failed for your ${plan.title} subscription`,
            text: [
              `Stripe could not take the payment for your ${plan.title} subscription. It will try again over the next days; the subscription is past due meanwhile and keeps its plan.`,
              '',
              `Update the payment method in the billing portal: ${dashboardBilling}`,
            ].join('\n'),
          });
        }
        await store.markEventProcessed(trx, eventId, clock.now().toISOString());
      });
    },

    /**
     * The hourly `billing.meter_report` job for the slot starting at `slot`: reports the hour before
     * it for every organization billed at Stripe. Each organization's hour is frozen (quantity =
     * its month's billable total now, less what earlier reports of the month froze) before Stripe is
     * called, so a retry re-sends the same identifier with the same value. One organization's
     * failure does not hold the others back; the job fails after trying all, and its retry sends
     * what is still pending.
     */
    async reportUsage(slot: string): Promise<void> {
      if (adapter.kind !== 'stripe') return;
      const hour = new Date(new Date(slot).getTime() - HOUR);
      const failures: unknown[] = [];
      for (const billed of await store.listStripeBilled(db, LIVE_STATUSES)) {
        try {
          await reportOrganization(adapter, billed.organization_id, billed.stripe_customer_id!, hour);
        } catch (error) {
          log.warn({ err: error, organization_id: billed.organization_id }, 'reporting usage to Stripe failed; the retry sends it again');
          failures.push(error);
        }
      }
      if (failures.length > 0) {
        throw new JobError(`reporting usage to Stripe failed for ${failures.length} organization(s)`, { retryable: true, cause: failures[0] });
      }
    },
  };
  return service;
}

export type BillingService = ReturnType<typeof createBillingService>;
