import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import Type from 'typebox';
import { requirePrincipal, type Access } from '../../http/access.ts';
import { keepRawBodies, rawBodyOf, singleHeader } from '../../http/raw-body.ts';
import type { HttpServer } from '../../http/server.ts';
import { checkoutPage, donePage, portalPage } from './billing-pages.ts';
import { BillingSessionSchema, CheckoutBody, LocalPageForm, LocalPageParams, SubscriptionSchema } from './billing.schemas.ts';
import type { BillingService } from './billing.service.ts';

/**
 * Billing is the dashboard's, for owners and admins, like key management: what a plan costs is not
 * an integration's business, and a leaked API key must not be able to change what the organization pays.
 */
const manage: Access = { scope: null, credentials: ['dashboard_token'], roles: ['owner', 'admin'] };
const localPage: Access = {
  public: true,
  reason: 'A local billing page is opened in a browser from the link checkout or portal answered; the sealed, 30-minute token in its path is the session.',
};
const webhook: Access = { public: true, reason: 'Stripe signs each webhook (Stripe-Signature over the raw body, at most 5 minutes old).', rateLimit: false };
const tags = ['Billing'];
/** Stripe's events are small; this leaves room for a subscription with many items. */
const WEBHOOK_BODY_LIMIT_BYTES = 512 * 1024;
const FORM_BODY_LIMIT_BYTES = 4 * 1024;

/** The page carries its session in its URL: it must not leak through a Referer, be cached, or load anything. */
function sendPage(reply: FastifyReply, html: string) {
  return reply
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
    .send(html);
}

export function registerBillingRoutes(app: HttpServer, service: BillingService, options: { dashboardUrl: string }): void {
  app.get('/v1/billing/subscription', {
    config: { access: manage },
    schema: { tags, summary: "The organization's plan and subscription", response: { 200: SubscriptionSchema } },
    handler: async (request) => service.getSubscription(requirePrincipal(request).organizationId),
  });

  app.post('/v1/billing/checkout', {
    config: { access: manage, waitsOnNetwork: true },
    schema: {
      tags,
      summary: 'Start buying a paid plan: answers the URL of the checkout (Stripe Checkout, or the local page that takes no payment)',
      description:
        'The plan changes when the payment completes (with Stripe: when its webhook arrives). An organization already paying at Stripe changes plans in the portal instead (`invalid_state`).',
      body: CheckoutBody,
      response: { 200: BillingSessionSchema },
    },
    handler: async (request) => service.checkout({ principal: requirePrincipal(request), requestId: request.id }, request.body),
  });

  app.post('/v1/billing/portal', {
    config: { access: manage, waitsOnNetwork: true },
    schema: {
      tags,
      summary: "Open the billing portal: answers its URL (Stripe's Billing Portal, or the local page), to change plans, cancel or update the payment method",
      response: { 200: BillingSessionSchema },
    },
    handler: async (request) => service.portal({ principal: requirePrincipal(request), requestId: request.id }),
  });

  if (service.adapterKind === 'local') {
    void app.register(async (plugin) => {
      const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
      // What an HTML form posts; only on these pages.
      scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT_BYTES }, (_request, body, done) =>
        done(null, Object.fromEntries(new URLSearchParams(String(body)))),
      );
      for (const kind of ['checkout', 'portal'] as const) {
        scope.get(`/billing/local/${kind}/:token`, {
          config: { access: localPage },
          schema: { tags, summary: `The local ${kind} page (HTML; local adapter only): shows the plan and says no payment is taken`, params: LocalPageParams },
          handler: async (request, reply) => {
            const { session, current, plans } = await service.localPage(kind, request.params.token);
            const wanted = plans.find((plan) => plan.name === session.plan);
            return sendPage(reply, kind === 'checkout' && wanted ? checkoutPage(wanted, current) : portalPage(current, plans));
          },
        });
        scope.post(`/billing/local/${kind}/:token`, {
          config: { access: localPage },
          schema: {
            tags,
            summary: `The local ${kind} page's form (local adapter only): changes the plan, takes no payment`,
            params: LocalPageParams,
            body: LocalPageForm,
          },
          handler: async (request, reply) => {
            const { from, to } = await service.completeLocal(kind, request.params.token, request.body.plan, request.id);
            return sendPage(reply, donePage(from, to, options.dashboardUrl));
          },
        });
      }
    });
  }

  if (service.adapterKind === 'stripe') {
    void app.register(async (plugin) => {
      const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
      keepRawBodies(scope, WEBHOOK_BODY_LIMIT_BYTES);
      scope.post('/billing/stripe/webhook', {
        config: { access: webhook },
        bodyLimit: WEBHOOK_BODY_LIMIT_BYTES,
        schema: {
          tags,
          summary: "Stripe's webhooks: checkout completed, subscription created, updated or deleted, invoice paid or failed",
          description:
            'Verified over the raw bytes; each handled event is kept once by id and applied by a job that re-reads the subscription from Stripe. Other event types are answered 200 and dropped.',
          response: { 200: Type.Object({ received: Type.Boolean() }) },
        },
        handler: async (request) => {
          await service.receiveStripeEvent(rawBodyOf(request), singleHeader(request, 'stripe-signature'));
          return { received: true };
        },
      });
    });
  }
}
