import Type, { type Static } from 'typebox';
import { Strict, Timestamp } from '../../http/schemas.ts';
import { PLAN_NAMES } from '../usage/usage.schemas.ts';

export const PlanNameSchema = Type.Enum(PLAN_NAMES, { description: 'The plan (docs/billing.md#plans).' });
/** The plans a checkout can buy: `free` needs none (downgrade in the portal). */
export const PaidPlanSchema = Type.Union([Type.Literal('pro'), Type.Literal('scale')], { description: 'The paid plan to subscribe to.' });

export const SUBSCRIPTION_STATUSES = ['active', 'trialing', 'past_due', 'incomplete', 'unpaid', 'paused', 'canceled'] as const;

export const SubscriptionSchema = Type.Object({
  object: Type.Literal('subscription'),
  plan: PlanNameSchema,
  status: Type.Union(
    [
      Type.Literal('active'),
      Type.Literal('trialing'),
      Type.Literal('past_due'),
      Type.Literal('incomplete'),
      Type.Literal('unpaid'),
      Type.Literal('paused'),
      Type.Literal('canceled'),
    ],
    {
      description:
        "Stripe's subscription status; `active` on `free` and on the local provider. `past_due`: the last payment failed, the plan is kept while Stripe retries.",
    },
  ),
  current_period_end: Type.Union([Timestamp, Type.Null()], {
    description: 'When the paid period ends (renews or, with `cancel_at_period_end`, ends); null on `free` and locally.',
  }),
  cancel_at_period_end: Type.Boolean(),
  provider: Type.Union([Type.Literal('local'), Type.Literal('stripe')], { description: 'Who takes the payment: `local` takes none.' }),
});
export type Subscription = Static<typeof SubscriptionSchema>;

export const CheckoutBody = Strict({ plan: PaidPlanSchema });
export type CheckoutInput = Static<typeof CheckoutBody>;

export const BillingSessionSchema = Type.Object({
  object: Type.Literal('billing_session'),
  url: Type.String({ description: 'Where to send the person: Stripe Checkout or the Billing Portal, or the local page that takes no payment.' }),
});
export type BillingSession = Static<typeof BillingSessionSchema>;

/** What a local page's form posts (`application/x-www-form-urlencoded`). */
export const LocalPageForm = Strict({ plan: PlanNameSchema });
export const LocalPageParams = Strict({ token: Type.String({ minLength: 1, maxLength: 2048 }) });
