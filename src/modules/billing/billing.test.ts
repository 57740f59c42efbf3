import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MINUTE } from '../../lib/clock.ts';
import { addMember, assertError, createKey, settle, signUp, startServerWithOwner, startServerWithTwoOrganizations } from '../../../test/factories.ts';
import { startFakeStripe, type FakeStripe } from '../../../test/fake-stripe.ts';
import { startServer, type Scope, type TestServer } from '../../../test/harness.ts';
import { ManualClock } from '../../lib/clock.ts';
import { meterIdentifier, STRIPE_API_VERSION } from './index.ts';

/** The path of a URL the service answered (built on PUBLIC_BASE_URL), to request from the test server. */
const pathOf = (url: string) => new URL(url).pathname;

async function postForm(server: TestServer, path: string, form: Record<string, string>) {
  return server.request('POST', path, { rawBody: new URLSearchParams(form).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
}

async function subscriptionOf(server: TestServer, token: string) {
  const response = await server.request('GET', '/v1/billing/subscription', { token });
  assert.equal(response.status, 200, response.text);
  return response.body;
}

async function auditOf(server: TestServer, organizationId: string) {
  return server.app.store.db
    .selectFrom('audit_events')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('action', '=', 'subscription.updated')
    .orderBy('id')
    .execute();
}

describe('billing with the local adapter', () => {
  test('an organization starts on free, active, local', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    assert.deepEqual(await subscriptionOf(server, owner.token), {
      object: 'subscription',
      plan: 'free',
      status: 'active',
      current_period_end: null,
      cancel_at_period_end: false,
      provider: 'local',
    });
    assert.equal(await server.app.services.billing.planOf(server.app.store.db, owner.organizationId), 'free');
  });

  test('a local checkout shows the plan, says no payment is taken, and on submit changes the plan with an audit entry', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'pro' } });
    assert.equal(checkout.status, 200, checkout.text);
    assert.equal(checkout.body.object, 'billing_session');
    assert.match(checkout.body.url, /^http:\/\/localhost:3000\/billing\/local\/checkout\//);

    const page = await server.request('GET', pathOf(checkout.body.url));
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    assert.match(page.text, /Subscribe to Pro/);
    assert.match(page.text, /No payment is taken/);

    const done = await postForm(server, pathOf(checkout.body.url), { plan: 'pro' });
    assert.equal(done.status, 200, done.text);
    assert.match(done.text, /from Free to <strong>Pro<\/strong>/);
    assert.equal((await subscriptionOf(server, owner.token)).plan, 'pro');
    assert.equal(await server.app.services.billing.planOf(server.app.store.db, owner.organizationId), 'pro');
    const [entry] = await auditOf(server, owner.organizationId);
    assert.ok(entry);
    assert.equal(entry.actor_type, 'member');
    assert.equal(entry.actor_id, owner.memberId);
    assert.deepEqual(JSON.parse(entry.data).plan, { from: 'free', to: 'pro' });
  });

  test('the local portal moves the organization back to free', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'scale' } });
    assert.equal((await postForm(server, pathOf(checkout.body.url), { plan: 'scale' })).status, 200);
    const portal = await server.request('POST', '/v1/billing/portal', { token: owner.token });
    assert.equal(portal.status, 200, portal.text);
    const page = await server.request('GET', pathOf(portal.body.url));
    assert.match(page.text, /on <strong>Scale<\/strong>/);
    assert.equal((await postForm(server, pathOf(portal.body.url), { plan: 'free' })).status, 200);
    assert.equal((await subscriptionOf(server, owner.token)).plan, 'free');
  });

  test('a checkout form for another plan than its link is refused with validation_failed on /plan', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'pro' } });
    const error = assertError(await postForm(server, pathOf(checkout.body.url), { plan: 'scale' }), 400, 'validation_failed');
    assert.equal(error.param, '/plan');
    assert.equal((await subscriptionOf(server, owner.token)).plan, 'free');
  });

  test('a tampered link is credential_invalid and one older than 30 minutes credential_expired', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'pro' } });
    const path = pathOf(checkout.body.url);
    const tampered = path.slice(0, -3) + (path.endsWith('AAA') ? 'BBB' : 'AAA');
    assert.equal(assertError(await postForm(server, tampered, { plan: 'pro' }), 401, 'credential_invalid').param, '/path/token');
    assertError(await server.request('GET', path.replace('/checkout/', '/portal/')), 401, 'credential_invalid');
    server.clock.advance(31 * MINUTE);
    assertError(await postForm(server, path, { plan: 'pro' }), 401, 'credential_expired');
    assert.equal((await server.app.services.billing.getSubscription(owner.organizationId)).plan, 'free');
  });

  test('a link opened by an admin who has since become an agent changes nothing (role_insufficient)', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const admin = await addMember(server, owner.organizationId, 'admin');
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: admin.token, body: { plan: 'pro' } });
    assert.equal(checkout.status, 200, checkout.text);
    const demoted = await server.request('PATCH', `/v1/members/${admin.memberId}`, { token: owner.token, body: { role: 'agent' } });
    assert.equal(demoted.status, 200, demoted.text);
    assertError(await postForm(server, pathOf(checkout.body.url), { plan: 'pro' }), 403, 'role_insufficient');
    assert.equal((await subscriptionOf(server, owner.token)).plan, 'free');
  });

  test('a checkout by an agent is refused with role_insufficient; an organization key with credential_kind_not_allowed', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    const agent = await addMember(server, owner.organizationId, 'agent');
    const error = assertError(await server.request('POST', '/v1/billing/checkout', { token: agent.token, body: { plan: 'pro' } }), 403, 'role_insufficient');
    assert.deepEqual(error.allowed_roles, ['owner', 'admin']);
    assertError(await server.request('GET', '/v1/billing/subscription', { token: agent.token }), 403, 'role_insufficient');
    assertError(await server.request('POST', '/v1/billing/portal', { token: agent.token }), 403, 'role_insufficient');
    const key = await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
    assertError(await server.request('POST', '/v1/billing/checkout', { token: key.key, body: { plan: 'pro' } }), 403, 'credential_kind_not_allowed');
  });

  test('a plan that is not for sale is validation_failed on /plan', async (t) => {
    const { server, owner } = await startServerWithOwner(t);
    for (const plan of ['enterprise', 'free', 5]) {
      const error = assertError(await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan } }), 400, 'validation_failed');
      assert.equal(error.param, '/plan');
    }
    assert.equal(assertError(await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: {} }), 400, 'validation_failed').param, '/plan');
  });

  test("one organization's plan change leaves another's alone", async (t) => {
    const { server, alpha, beta } = await startServerWithTwoOrganizations(t);
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: alpha.token, body: { plan: 'scale' } });
    assert.equal((await postForm(server, pathOf(checkout.body.url), { plan: 'scale' })).status, 200);
    assert.equal((await subscriptionOf(server, alpha.token)).plan, 'scale');
    assert.equal((await subscriptionOf(server, beta.token)).plan, 'free');
    assert.deepEqual(await auditOf(server, beta.organizationId), []);
  });

  test('there is no Stripe webhook without Stripe', async (t) => {
    const { server } = await startServerWithOwner(t);
    assertError(
      await server.request('POST', '/billing/stripe/webhook', { rawBody: '{}', headers: { 'content-type': 'application/json' } }),
      404,
      'route_not_found',
    );
  });
});

async function startWithStripe(t: Scope, clock = new ManualClock('2026-06-01T12:00:00.000Z')): Promise<{ server: TestServer; stripe: FakeStripe }> {
  const stripe = await startFakeStripe(t, { clock });
  const server = await startServer(t, { clock, env: stripe.env });
  stripe.sendWebhooksTo(server.url);
  return { server, stripe };
}

/** Checkout through the API, then the pay page's button, as a person would; settled. Answers the subscription at Stripe. */
async function subscribe(server: TestServer, stripe: FakeStripe, token: string, plan: 'pro' | 'scale' = 'pro') {
  const checkout = await server.request('POST', '/v1/billing/checkout', { token, body: { plan } });
  assert.equal(checkout.status, 200, checkout.text);
  const paid = await fetch(checkout.body.url, { method: 'POST', redirect: 'manual' });
  assert.equal(paid.status, 303);
  await settle(server);
  const sessionId = new URL(checkout.body.url).pathname.split('/').pop()!;
  return stripe.subscriptions.get(stripe.checkoutSessions.get(sessionId)!.subscription)!;
}

async function seedMessagesSent(server: TestServer, organizationId: string, period: string, quantity: number) {
  await server.app.store.db
    .insertInto('usage_periods')
    .values({ organization_id: organizationId, period, meter: 'messages_sent', quantity })
    .onConflict((conflict) => conflict.columns(['organization_id', 'period', 'meter']).doUpdateSet({ quantity }))
    .execute();
}

describe('billing with Stripe', () => {
  test('checkout, pay, webhook, job: the subscription is active on the plan bought', async (t) => {
    const { server, stripe } = await startWithStripe(t);
    const owner = await signUp(server, { organizationName: 'Acme' });
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'scale' } });
    assert.equal(checkout.status, 200, checkout.text);
    assert.ok(checkout.body.url.startsWith(`${stripe.url}/pay/cs_test_`), checkout.body.url);
    const [customer] = [...stripe.customers.values()];
    assert.deepEqual(customer?.metadata, { organization_id: owner.organizationId });
    assert.equal(customer?.name, 'Acme');
    assert.deepEqual([...stripe.apiVersions], [STRIPE_API_VERSION]);
    // Nothing changes before Stripe says the payment went through.
    assert.equal((await subscriptionOf(server, owner.token)).plan, 'free');

    const paid = await fetch(checkout.body.url, { method: 'POST', redirect: 'manual' });
    assert.equal(paid.status, 303);
    await settle(server);
    const subscription = await subscriptionOf(server, owner.token);
    const atStripe = [...stripe.subscriptions.values()][0]!;
    assert.deepEqual(subscription, {
      object: 'subscription',
      plan: 'scale',
      status: 'active',
      current_period_end: new Date(atStripe.items.data[0].current_period_end * 1000).toISOString(),
      cancel_at_period_end: false,
      provider: 'stripe',
    });
    assert.deepEqual(
      atStripe.items.data.map((item: any) => item.price.id),
      [stripe.prices.scale, stripe.prices.metered],
    );
    assert.equal(await server.app.services.billing.planOf(server.app.store.db, owner.organizationId), 'scale');
    // A second checkout would make a second subscription: the portal is where plans change now.
    assertError(await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'pro' } }), 409, 'invalid_state');
    const portal = await server.request('POST', '/v1/billing/portal', { token: owner.token });
    assert.equal(portal.status, 200, portal.text);
    assert.ok(portal.body.url.startsWith(`${stripe.url}/portal/bps_`));
    assert.equal(stripe.customers.size, 1);
  });

  test('a webhook whose signature does not match is refused with signature_invalid and kept nowhere', async (t) => {
    const { server, stripe } = await startWithStripe(t);
    const owner = await signUp(server);
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'pro' } });
    const { events } = await stripe.pay(new URL(checkout.body.url).pathname.split('/').pop()!, { deliver: false });
    const forged = await stripe.deliver(events[0]!, { secret: 'whsec_not_the_secret' });
    assert.equal(forged.status, 401);
    assert.equal(forged.body.error.code, 'signature_invalid');
    assert.equal(forged.body.error.param, '/header/stripe-signature');
    assert.match(forged.body.error.message, /No v1 signature .* matches the body/);
    const garbled = await stripe.deliver(events[0]!, { signature: 'sha256=abc' });
    assert.match(garbled.body.error.message, /not of the form t=<timestamp>,v1=<signature>/);
    assert.equal(await server.app.store.db.selectFrom('billing_stripe_events').select('id').executeTakeFirst(), undefined);
    await settle(server);
    assert.equal((await subscriptionOf(server, owner.token)).plan, 'free');
  });

  test('a webhook signed more than 5 minutes ago is refused as a possible replay', async (t) => {
    const { server, stripe } = await startWithStripe(t);
    const owner = await signUp(server);
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'pro' } });
    const { events } = await stripe.pay(new URL(checkout.body.url).pathname.split('/').pop()!, { deliver: false });
    const signedAt = Math.floor(server.clock.now().getTime() / 1000);
    server.clock.advance(5 * MINUTE + 1000);
    const late = await stripe.deliver(events[0]!, { timestamp: signedAt });
    assert.equal(late.status, 401);
    assert.equal(late.body.error.code, 'signature_invalid');
    assert.match(late.body.error.message, /more than 5 minutes old/);
    // Within the 5 minutes, the same event is taken.
    assert.equal((await stripe.deliver(events[0]!, { timestamp: signedAt + 10 })).status, 200);
  });

  test('the same event delivered twice is processed once', async (t) => {
    const { server, stripe } = await startWithStripe(t);
    const owner = await signUp(server);
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'pro' } });
    const { events } = await stripe.pay(new URL(checkout.body.url).pathname.split('/').pop()!, { deliver: false });
    const created = events[0]!;
    assert.equal((await stripe.deliver(created)).status, 200);
    assert.equal((await stripe.deliver(created)).status, 200);
    const jobs = await server.app.store.db.selectFrom('jobs').select('id').where('name', '=', 'billing.stripe_event').execute();
    assert.equal(jobs.length, 1);
    await settle(server);
    assert.equal((await stripe.deliver(created)).status, 200);
    await settle(server);
    assert.equal((await auditOf(server, owner.organizationId)).length, 1);
    assert.equal((await subscriptionOf(server, owner.token)).plan, 'pro');
  });

  test('customer.subscription.updated delivered before created still ends in Stripe’s current state', async (t) => {
    const { server, stripe } = await startWithStripe(t);
    const owner = await signUp(server);
    const checkout = await server.request('POST', '/v1/billing/checkout', { token: owner.token, body: { plan: 'pro' } });
    const { subscription, events } = await stripe.pay(new URL(checkout.body.url).pathname.split('/').pop()!, { deliver: false });
    // The customer then asks, in the portal, to cancel at the period's end.
    subscription.cancel_at_period_end = true;
    const updated = { ...events[0]!, id: 'evt_updated_first', type: 'customer.subscription.updated', data: { object: structuredClone(subscription) } };
    assert.equal((await stripe.deliver(updated)).status, 200);
    await settle(server);
    assert.equal((await stripe.deliver(events[0]!)).status, 200);
    await settle(server);
    const state = await subscriptionOf(server, owner.token);
    assert.equal(state.plan, 'pro');
    assert.equal(state.status, 'active');
    assert.equal(state.cancel_at_period_end, true);
  });

  test('a failed payment puts the subscription past_due and mails the owner', async (t) => {
    const { server, stripe } = await startWithStripe(t);
    const owner = await signUp(server);
    const admin = await addMember(server, owner.organizationId, 'admin');
    const subscription = await subscribe(server, stripe, admin.token);
    await stripe.failPayment(subscription.id);
    await settle(server);
    const state = await subscriptionOf(server, owner.token);
    assert.equal(state.status, 'past_due');
    assert.equal(state.plan, 'pro');
    const mails = await server.app.store.db
      .selectFrom('mails')
      .select(['to_address', 'subject', 'status'])
      .where('organization_id', '=', owner.organizationId)
      .execute();
    assert.deepEqual(
      mails.map((mail) => ({ ...mail })),
      [{ to_address: owner.email, subject: 'Payment failed for your Pro subscription', status: 'sent' }],
    );
  });

  test('a canceled subscription returns the organization to free', async (t) => {
    const { server, stripe } = await startWithStripe(t);
    const owner = await signUp(server);
    const subscription = await subscribe(server, stripe, owner.token);
    await stripe.cancel(subscription.id);
    await settle(server);
    const state = await subscriptionOf(server, owner.token);
    assert.equal(state.plan, 'free');
    assert.equal(state.status, 'canceled');
    assert.equal(await server.app.services.billing.planOf(server.app.store.db, owner.organizationId), 'free');
  });

  test('the local pages do not exist with Stripe', async (t) => {
    const { server } = await startWithStripe(t);
    assertError(await server.request('GET', '/billing/local/checkout/anything'), 404, 'route_not_found');
  });

  test('the hourly report sends each hour’s messages once, under org:hour, and a retry after a lost answer re-sends the same event', async (t) => {
    const { server, stripe } = await startWithStripe(t);
    const owner = await signUp(server);
    const other = await signUp(server);
    await subscribe(server, stripe, owner.token);
    await seedMessagesSent(server, owner.organizationId, '2026-06', 120);
    await seedMessagesSent(server, other.organizationId, '2026-06', 999);
    const customer = [...stripe.customers.values()][0]!.id;

    server.clock.set('2026-06-01T13:00:05.000Z');
    await settle(server);
    assert.deepEqual(
      stripe.meterEvents.map((e) => ({ identifier: e.identifier, value: e.value, customer: e.customer })),
      [{ identifier: meterIdentifier(owner.organizationId, new Date('2026-06-01T12:00:00.000Z')), value: 120, customer }],
    );

    // The next hour: Stripe accepts the event, but the answer never arrives, neither to the SDK's own
    // retry of a closed connection (same Idempotency-Key): the job's attempt fails before it records.
    await seedMessagesSent(server, owner.organizationId, '2026-06', 150);
    stripe.cutAfterAccepting(2);
    server.clock.set('2026-06-01T14:00:05.000Z');
    await settle(server);
    const pending = await server.app.store.db
      .selectFrom('billing_meter_reports')
      .selectAll()
      .where('hour', '=', '2026-06-01T13:00:00.000Z')
      .executeTakeFirstOrThrow();
    assert.equal(pending.status, 'pending');
    assert.equal(pending.quantity, 30);
    // Meanwhile more messages: the retry still sends what was frozen, not a new total.
    await seedMessagesSent(server, owner.organizationId, '2026-06', 155);
    server.clock.advance(2 * MINUTE);
    await settle(server);
    const reported = await server.app.store.db
      .selectFrom('billing_meter_reports')
      .selectAll()
      .where('hour', '=', '2026-06-01T13:00:00.000Z')
      .executeTakeFirstOrThrow();
    assert.equal(reported.status, 'reported');
    const identifier = meterIdentifier(owner.organizationId, new Date('2026-06-01T13:00:00.000Z'));
    assert.equal(stripe.meterEvents.filter((e) => e.identifier === identifier).length, 1);
    assert.equal(stripe.meteredTotal(customer), 150);

    server.clock.set('2026-06-01T15:00:05.000Z');
    await settle(server);
    assert.equal(stripe.meteredTotal(customer), 155);
    assert.equal(stripe.meterEvents.length, 3);
  });

  test('at a month boundary the last hour of the month is billed to that month and the new month starts from zero', async (t) => {
    const { server, stripe } = await startWithStripe(t, new ManualClock('2026-06-30T21:30:00.000Z'));
    const owner = await signUp(server);
    await subscribe(server, stripe, owner.token);
    const customer = [...stripe.customers.values()][0]!.id;
    await seedMessagesSent(server, owner.organizationId, '2026-06', 10);
    server.clock.set('2026-06-30T22:00:01.000Z');
    await settle(server);
    await seedMessagesSent(server, owner.organizationId, '2026-06', 13);
    server.clock.set('2026-06-30T23:00:01.000Z');
    await settle(server);
    // The month's last messages, and the first of July, counted before the midnight report runs.
    await seedMessagesSent(server, owner.organizationId, '2026-06', 15);
    await seedMessagesSent(server, owner.organizationId, '2026-07', 4);
    server.clock.set('2026-07-01T00:00:01.000Z');
    await settle(server);
    server.clock.set('2026-07-01T01:00:01.000Z');
    await settle(server);
    const unix = (iso: string) => Date.parse(iso) / 1000;
    assert.deepEqual(
      stripe.meterEvents.map((e) => ({ hour: e.identifier.slice(e.identifier.indexOf(':') + 1), value: e.value, timestamp: e.timestamp })),
      [
        { hour: '2026-06-30T21:00:00.000Z', value: 10, timestamp: unix('2026-06-30T21:59:59.000Z') },
        { hour: '2026-06-30T22:00:00.000Z', value: 3, timestamp: unix('2026-06-30T22:59:59.000Z') },
        { hour: '2026-06-30T23:00:00.000Z', value: 2, timestamp: unix('2026-06-30T23:59:59.000Z') },
        { hour: '2026-07-01T00:00:00.000Z', value: 4, timestamp: unix('2026-07-01T00:59:59.000Z') },
      ],
    );
    assert.equal(stripe.meteredTotal(customer), 19);
  });
});
