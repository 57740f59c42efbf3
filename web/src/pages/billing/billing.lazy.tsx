import { useMutation, useQuery } from '@tanstack/react-query';
import { createLazyRoute } from '@tanstack/react-router';
import { useState } from 'react';
import type { BillingSession, Subscription } from '../../../../src/modules/billing/billing.schemas.ts';
import type { MeterName } from '../../../../src/modules/usage/usage.schemas.ts';
import { useApi } from '../../auth/SessionContext.tsx';
import { AdminPage, Badge, Section, tableClass } from '../../ui/admin.tsx';
import { Button, ErrorMessage, Loading, Notice } from '../../ui/controls.tsx';
import { formatQuantity, METER_LABELS } from '../usage/usage-data.ts';
import styles from './billing.module.css';
import { PLAN_SUMMARIES, planTitle, type PlanSummary } from './plans.ts';

const subscriptionKey = ['billing-subscription'] as const;
/** After a checkout, Stripe's webhook changes the plan a moment later: the page looks again this often, this many times. */
const CONFIRM_POLL_MS = 2_000;
const CONFIRM_POLLS = 30;

const STATUS_TONE: Record<Subscription['status'], 'good' | 'warn' | 'bad'> = {
  active: 'good',
  trialing: 'good',
  past_due: 'warn',
  incomplete: 'warn',
  paused: 'warn',
  unpaid: 'bad',
  canceled: 'bad',
};

const price = (plan: PlanSummary) => (plan.monthlyPriceCents === 0 ? 'Free' : `$${plan.monthlyPriceCents / 100} a month + metered messages`);

/** Where checkout and the portal send people back: `?checkout=success|canceled` (docs/billing.md). */
function checkoutOutcome(): 'success' | 'canceled' | undefined {
  const value = new URLSearchParams(window.location.search).get('checkout');
  return value === 'success' || value === 'canceled' ? value : undefined;
}

/** The organization's plan, what each plan includes, and the way to checkout and the billing portal (owners and admins). */
function BillingPage() {
  const api = useApi();
  const [outcome] = useState(checkoutOutcome);
  const subscription = useQuery({
    queryKey: subscriptionKey,
    queryFn: ({ signal }) => api.get<Subscription>('/v1/billing/subscription', { signal }),
    // Back from a paid checkout while the plan still reads free: Stripe's webhook has not landed yet.
    refetchInterval: (query) =>
      outcome === 'success' && query.state.data?.plan === 'free' && query.state.dataUpdateCount < CONFIRM_POLLS ? CONFIRM_POLL_MS : false,
  });
  // Both answer a URL to send the person to; nothing changes before they finish there.
  const go = useMutation({
    mutationFn: (request: { path: '/v1/billing/checkout' | '/v1/billing/portal'; plan?: 'pro' | 'scale' }) =>
      api.post<BillingSession>(request.path, request.plan ? { plan: request.plan } : undefined),
    onSuccess: (session) => window.location.assign(session.url),
  });
  if (subscription.isPending) return <Loading />;
  if (subscription.error) {
    return (
      <AdminPage title="Billing">
        <ErrorMessage error={subscription.error} />
      </AdminPage>
    );
  }
  const current = subscription.data;
  const local = current.provider === 'local';
  const busy = go.isPending || go.isSuccess;
  return (
    <AdminPage
      title="Billing"
      description="The organization's plan and how it is paid. Limits count live traffic per calendar month (UTC)."
      actions={
        <Button onClick={() => go.mutate({ path: '/v1/billing/portal' })} disabled={busy}>
          {local ? 'Open the billing page' : 'Manage billing and invoices'}
        </Button>
      }
    >
      {outcome === 'success' &&
        (current.plan === 'free' ? (
          <Notice>Payment received. Waiting for the payment provider to confirm the new plan…</Notice>
        ) : (
          <p role="status" className={styles.success}>
            Thank you: the organization is on {planTitle(current.plan)}.
          </p>
        ))}
      {outcome === 'canceled' && <Notice>The checkout was cancelled: nothing was charged and the plan is unchanged.</Notice>}
      <ErrorMessage error={go.error} />
      <Section title="Current plan">
        <dl className={styles.details}>
          <dt>Plan</dt>
          <dd data-testid="current-plan">{planTitle(current.plan)}</dd>
          <dt>Status</dt>
          <dd>
            <Badge tone={STATUS_TONE[current.status]}>{current.status.replace('_', ' ')}</Badge>
          </dd>
          {current.current_period_end && (
            <>
              <dt>{current.cancel_at_period_end ? 'Ends on' : 'Renews on'}</dt>
              <dd>{new Date(current.current_period_end).toLocaleDateString()}</dd>
            </>
          )}
          <dt>Payments</dt>
          <dd>{local ? 'None: this service runs without a payment provider, and plan changes take effect at once.' : 'By Stripe'}</dd>
        </dl>
        {current.status === 'past_due' && (
          <Notice>
            The last payment failed. Stripe retries it for a few days and the plan is kept meanwhile: update the payment method in the billing portal.
          </Notice>
        )}
      </Section>
      <Section title="Plans">
        <table className={`${tableClass} ${styles.plans}`} aria-label="What each plan includes">
          <thead>
            <tr>
              <th scope="col">Monthly limit</th>
              {PLAN_SUMMARIES.map((plan) => (
                <th key={plan.name} scope="col" data-plan={plan.name}>
                  {plan.title}
                  {plan.name === current.plan && ' (current)'}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            <tr>
              <th scope="row">Price</th>
              {PLAN_SUMMARIES.map((plan) => (
                <td key={plan.name} data-plan={plan.name} data-price-cents={plan.monthlyPriceCents}>
                  {price(plan)}
                </td>
              ))}
            </tr>
            {(Object.keys(PLAN_SUMMARIES[0]!.limits) as MeterName[]).map((meter) => (
              <tr key={meter}>
                <th scope="row">{METER_LABELS[meter]}</th>
                {PLAN_SUMMARIES.map((plan) => {
                  const limit = plan.limits[meter];
                  return (
                    <td key={plan.name} data-plan={plan.name} data-meter={meter} data-limit={limit?.limit}>
                      {limit ? formatQuantity(limit.limit, meter === 'media_bytes' ? 'bytes' : 'count') : 'Unlimited'}
                      {limit?.hard && <span className={styles.hard}> (nothing sent past it)</span>}
                    </td>
                  );
                })}
              </tr>
            ))}
            <tr>
              <th scope="row">
                <span className="visually-hidden">Change</span>
              </th>
              {PLAN_SUMMARIES.map((plan) => (
                <td key={plan.name}>
                  <PlanAction plan={plan} current={current} disabled={busy} onCheckout={(name) => go.mutate({ path: '/v1/billing/checkout', plan: name })} />
                </td>
              ))}
            </tr>
          </tbody>
        </table>
        <p className={styles.note}>
          Past a soft limit the service warns (at 50 %, 80 % and 100 %) and bills the extra messages on the metered price. Downgrades and cancellations are made
          in the billing portal.
        </p>
      </Section>
    </AdminPage>
  );
}

/**
 * Checkout buys a paid plan; an organization already paying at Stripe changes plans in the portal
 * instead (a second checkout would be a second subscription: the API refuses it).
 */
function PlanAction({
  plan,
  current,
  disabled,
  onCheckout,
}: {
  plan: PlanSummary;
  current: Subscription;
  disabled: boolean;
  onCheckout: (plan: 'pro' | 'scale') => void;
}) {
  if (plan.name === current.plan) return <span className={styles.note}>Your plan</span>;
  const order =
    PLAN_SUMMARIES.findIndex((candidate) => candidate.name === plan.name) - PLAN_SUMMARIES.findIndex((candidate) => candidate.name === current.plan);
  const paying = current.provider === 'stripe' && current.plan !== 'free';
  if (plan.name === 'free' || paying) return <span className={styles.note}>In the billing portal</span>;
  const name = plan.name;
  return (
    <Button variant={order > 0 ? 'primary' : undefined} disabled={disabled} onClick={() => onCheckout(name)}>
      {order > 0 ? `Upgrade to ${plan.title}` : `Switch to ${plan.title}`}
    </Button>
  );
}

export const Route = createLazyRoute('/app/billing')({ component: BillingPage });
