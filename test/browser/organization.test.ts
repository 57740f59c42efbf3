/**
 * The organization's pages in a real browser: a connection's page (sync, re-authorisation,
 * disconnecting, the history import's progress bar moving with the provider's chunks), usage with
 * its charts and thresholds, checkout through a fake Stripe, and a teammate invited, joining from a
 * second browser, changed and removed. A viewer sees none of the controls that write.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { ManualClock } from '../../src/lib/clock.ts';
import { PLANS } from '../../src/modules/usage/plans.ts';
import { PLAN_SUMMARIES } from '../../web/src/pages/billing/plans.ts';
import { startFakeStripe } from '../fake-stripe.ts';
import type { TestServer } from '../harness.ts';
import { addMember, createConnection, inbound, settle, signUp } from '../factories.ts';
import { browserTest, dashboardSuite, openDashboard, signIn, startDashboardServer, unlabelledControls } from './browser.ts';

/** The service's PUBLIC_BASE_URL in tests: links it builds (checkout's return, invite mails) point there. */
const PUBLIC_BASE_URL = 'http://localhost:3000';

/** Sends the browser to the test server wherever the service's links name its public address. */
async function publicAddressIsServer(context: BrowserContext, server: TestServer): Promise<void> {
  await context.route(`${PUBLIC_BASE_URL}/**`, (route) =>
    route.fulfill({ status: 302, headers: { location: route.request().url().replace(PUBLIC_BASE_URL, server.url) } }),
  );
}

async function waitLive(page: Page): Promise<void> {
  await page.locator('[data-testid="live-status"][data-state="live"]').waitFor();
}

async function control(server: TestServer, path: string, body: Record<string, unknown>): Promise<void> {
  const response = await server.request('POST', `/sandbox/control/${path}`, { body });
  assert.equal(response.status, 200, response.text);
}

async function connectionOf(server: TestServer, token: string, id: string) {
  return (await server.request('GET', `/v1/connections/${id}`, { token })).body;
}

/** The link of the latest invite mail to `email`, as the invitee reads it (the mail is sealed at rest). */
async function inviteLinkMailedTo(server: TestServer, email: string): Promise<string> {
  const rows = await server.app.store.db.selectFrom('mails').select('id').where('to_address', '=', email).orderBy('id').execute();
  const mail = await server.app.services.mail.find(rows.at(-1)!.id);
  const link = /(http:\/\/localhost:3000\/dashboard\/accept-invite#token=[A-Za-z0-9_-]{43})\n/.exec(mail?.text ?? '');
  assert.ok(link, `an invite mail with its link reached ${email}`);
  return link[1]!;
}

describe('the organization’s pages', () => {
  const setup = dashboardSuite();

  it(
    "a connection's page syncs, re-authorises after the provider refused its token, and disconnects",
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner, { name: 'Sales line' });
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Connections' }).click();
      await page
        .getByRole('row', { name: /Sales line/ })
        .getByRole('link', { name: 'Sales line' })
        .click();
      await page.getByRole('heading', { name: 'Sales line' }).waitFor();
      assert.match(page.url(), new RegExp(`/dashboard/connections/${connection.id}$`));
      assert.deepEqual(await unlabelledControls(page), []);

      // The provider's quality changed; the service has not heard yet (its webhook waits in the queue).
      await control(server, 'quality', { phone_number_id: connection.phone_number_id, quality_rating: 'YELLOW' });
      await page.getByRole('button', { name: 'Sync with the provider' }).click();
      await page.getByText('Synced: quality yellow').waitFor();
      assert.equal((await connectionOf(server, owner.token, connection.id)).quality_rating, 'yellow');
      await settle(server);

      // The provider stops accepting the token: the next sync says so, and the page offers re-authorisation.
      await control(server, 'revoke-token', { waba_id: connection.waba_id });
      await page.getByRole('button', { name: 'Sync with the provider' }).click();
      await page.getByRole('alert').filter({ hasText: 'connection_needs_reauth' }).waitFor();
      await page.getByText('The provider no longer accepts this connection').waitFor();
      await page.getByRole('button', { name: 'Re-authorise' }).click();
      await page.getByText('Re-authorised: the number is connected again.').waitFor();
      assert.equal((await connectionOf(server, owner.token, connection.id)).status, 'connected');
      assert.equal(await page.getByText('The provider no longer accepts this connection').count(), 0);

      await page.getByRole('button', { name: 'Disconnect', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: 'Disconnect Sales line?' });
      await dialog.getByText('sends are refused').waitFor();
      await dialog.getByRole('button', { name: 'Disconnect the number' }).click();
      await page.getByText('disconnected', { exact: true }).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Sync with the provider' }).count(), 0, 'a disconnected number offers nothing to do');
      assert.equal((await connectionOf(server, owner.token, connection.id)).status, 'disconnected');
      await page.getByRole('link', { name: 'All connections' }).click();
      await page.getByText('No number is connected yet').waitFor();
    }),
  );

  it(
    "moves a business app number's history import bar as the provider's chunks arrive",
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner, { coexistence: true, name: 'Shop app' });
      await settle(server);
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner, `/dashboard/connections/${connection.id}`);
      await page.getByRole('heading', { name: 'Shop app' }).waitFor();
      await waitLive(page);
      const bar = page.getByRole('progressbar', { name: 'History import' });
      assert.equal(await bar.getAttribute('aria-valuenow'), '0');

      const chunk = (progress: number, threads: unknown[]) =>
        control(server, 'history', { phone_number_id: connection.phone_number_id, phase: 0, chunk_order: progress, progress, threads });
      await chunk(50, [
        {
          user: '447700900123',
          messages: [
            { direction: 'inbound', text: 'Do you ship abroad?', timestamp: 1_770_000_000 },
            { direction: 'outbound', text: 'We do!', timestamp: 1_770_000_100 },
          ],
        },
      ]);
      await settle(server);
      await page.locator('[role="progressbar"][aria-valuenow="50"]').waitFor();
      await page.getByText('Importing: 50 %, 2 messages').waitFor();

      await chunk(100, []);
      await settle(server);
      await page.locator('[role="progressbar"][aria-valuenow="100"]').waitFor();
      await page.getByText('Imported: 100 %, 2 messages').waitFor();
      assert.deepEqual(await unlabelledControls(page), []);
    }),
  );

  it(
    'charts the month’s messages by day, category and number, against the plan’s thresholds',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner, { name: 'Live line' });
      const first = await inbound(server, connection, { text: 'Hello?' });
      for (const text of ['Hi!', 'How can we help?', 'Your order shipped.']) {
        const sent = await server.request('POST', '/v1/messages', {
          token: owner.token,
          headers: { 'idempotency-key': randomUUID() },
          body: { connection_id: connection.id, contact_id: first.contact_id, type: 'text', text: { body: text } },
        });
        assert.equal(sent.status, 201, sent.text);
      }
      await settle(server);

      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Usage' }).click();
      const sentRow = page.getByRole('table', { name: 'Meters' }).getByRole('row', { name: /^Messages sent/ });
      await sentRow.waitFor();
      assert.match((await sentRow.textContent()) ?? '', /Messages sent31,0000\.3 %/);
      assert.match(
        (await page
          .getByRole('table', { name: 'Meters' })
          .getByRole('row', { name: /^Messages received/ })
          .textContent()) ?? '',
        /1Unlimited/,
      );

      // Three charts, each drawn (uPlot's canvas) with its figures in words.
      await page.locator('[data-testid="chart"] canvas').nth(2).waitFor();
      assert.equal(await page.locator('[data-testid="chart"] canvas').count(), 3);
      assert.equal(await page.getByTestId('thresholds').textContent(), '50 % at 500, 80 % at 800, 100 % at 1,000');
      await page.getByText('3 messages sent in').waitFor();
      await page.getByText(/: 0 marketing, 0 utility, 0 authentication, 3 service\./).waitFor();
      await page.getByText(/: Live line 3\./).waitFor();
      // The thresholds are drawn as lines of their own, named in the chart's legend.
      await page.locator('.u-legend').getByText('Limit (1,000)').waitFor();
      assert.deepEqual(await unlabelledControls(page), []);

      // A past month: nothing used, the same page.
      const period = page.getByLabel('Period');
      const lastMonth = await period.locator('option').nth(1).getAttribute('value');
      assert.ok(lastMonth);
      await period.selectOption(lastMonth);
      await page.getByTestId('thresholds').waitFor();
      await page.getByText('0 messages sent in').waitFor();

      // One number's share: the organization's limits are not that number's.
      await period.selectOption('current');
      await page.getByLabel('Number', { exact: true }).selectOption({ label: 'Live line' });
      await page.getByText("One number's share").waitFor();
      assert.equal(await page.getByTestId('thresholds').count(), 0);
    }),
  );

  it(
    'upgrades to Pro through Stripe’s checkout and shows the new plan once Stripe confirms it',
    browserTest(async (t) => {
      const { browser } = await setup;
      const clock = new ManualClock(new Date().toISOString());
      const stripe = await startFakeStripe(t, { clock });
      const server = await startDashboardServer(t, { clock, env: stripe.env });
      stripe.sendWebhooksTo(server.url);
      const owner = await signUp(server);
      const { page, context } = await openDashboard(t, browser, server);
      await publicAddressIsServer(context, server);
      // The page's clock: back from checkout it reads the plan again every 2 s until Stripe's webhook
      // landed; the test moves it once the server has settled rather than wait for the read.
      await context.clock.install();
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Billing' }).click();
      await page.getByTestId('current-plan').getByText('Free').waitFor();
      assert.deepEqual(await unlabelledControls(page), []);

      // What each plan includes is the service's own table.
      for (const plan of Object.values(PLANS)) {
        const price = page.locator(`td[data-plan="${plan.name}"][data-price-cents]`);
        assert.equal(await price.getAttribute('data-price-cents'), String(plan.monthly_price_cents));
        for (const [meter, limit] of Object.entries(plan.limits)) {
          assert.equal(await page.locator(`td[data-plan="${plan.name}"][data-meter="${meter}"]`).getAttribute('data-limit'), String(limit.limit));
        }
      }
      assert.deepEqual(
        PLAN_SUMMARIES.map((plan) => [plan.name, plan.title, plan.monthlyPriceCents, plan.limits]),
        Object.values(PLANS).map((plan) => [plan.name, plan.title, plan.monthly_price_cents, plan.limits]),
        "the dashboard's copy of the plans table is the service's",
      );

      await page.getByRole('button', { name: 'Upgrade to Pro' }).click();
      await page.waitForURL(`${stripe.url}/pay/**`);
      await page.getByRole('button', { name: 'Pay' }).click();
      await page.waitForURL(`${server.url}/dashboard/billing?checkout=success`);
      await settle(server);
      await page.clock.fastForward(2_000);
      await page.getByText('Thank you: the organization is on Pro.').waitFor();
      await page.getByTestId('current-plan').getByText('Pro').waitFor();
      assert.equal((await server.request('GET', '/v1/billing/subscription', { token: owner.token })).body.plan, 'pro');
      // Paying at Stripe now: plans change in the portal, never by a second checkout.
      assert.equal(await page.getByRole('button', { name: 'Upgrade to Scale' }).count(), 0);
      await page.getByRole('button', { name: 'Manage billing and invoices' }).waitFor();
    }),
  );

  it(
    'invites a teammate who joins from another browser, then changes their role and removes them',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server, { organizationName: 'Invite Co' });
      const email = `ada-${randomBytes(4).toString('hex')}@example.com`;
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Members' }).click();
      await page.getByRole('row', { name: new RegExp(owner.email) }).waitFor();
      await page.getByText('No invitations yet').waitFor();
      assert.deepEqual(await page.getByLabel('Role', { exact: true }).locator('option').allTextContents(), ['admin', 'agent', 'viewer']);
      await page.getByLabel('Email').fill(email);
      await page.getByRole('button', { name: 'Send invite' }).click();
      await page.getByText(`Invitation sent to ${email}`).waitFor();
      const invitation = page.getByRole('table', { name: 'Invitations' }).getByRole('row', { name: new RegExp(email) });
      await invitation.getByText('pending', { exact: true }).waitFor();
      assert.deepEqual(await unlabelledControls(page), []);

      // The invitee opens the mailed link in a browser of their own, new to the service.
      const link = await inviteLinkMailedTo(server, email);
      const { page: invitee } = await openDashboard(t, browser, server);
      await invitee.goto(link.replace(PUBLIC_BASE_URL, server.url));
      await invitee.getByRole('form', { name: 'Create your account' }).waitFor();
      assert.deepEqual(await unlabelledControls(invitee), []);
      await invitee.getByLabel('Your name').fill('Ada Lovelace');
      await invitee.getByLabel('Password').fill('a long enough password');
      await invitee.getByRole('button', { name: 'Create account and join' }).click();
      await invitee.getByText('You joined Invite Co as an agent').waitFor();
      await invitee.getByRole('link', { name: 'Open the inbox' }).click();
      await invitee.getByRole('heading', { name: 'Inbox' }).waitFor();
      assert.equal(await invitee.getByTestId('member-role').textContent(), 'agent');

      // Back with the owner: the new member is listed, the invitation accepted.
      await page.reload();
      const member = page.getByRole('table', { name: 'Members' }).getByRole('row', { name: /Ada Lovelace/ });
      await member.getByRole('cell', { name: 'agent', exact: true }).waitFor();
      await invitation.getByText('accepted', { exact: true }).waitFor();
      await member.getByLabel('Role of Ada Lovelace').selectOption('viewer');
      await member.getByRole('button', { name: 'Change role' }).click();
      await member.getByRole('cell', { name: 'viewer', exact: true }).waitFor();
      const [listed] = (await server.request('GET', `/v1/members?limit=100`, { token: owner.token })).body.data.filter((m: any) => m.email === email);
      assert.equal(listed.role, 'viewer');

      await member.getByRole('button', { name: 'Remove' }).click();
      const dialog = page.getByRole('dialog', { name: 'Remove Ada Lovelace?' });
      await dialog.getByText('their sessions end').waitFor();
      await dialog.getByRole('button', { name: 'Remove member' }).click();
      // The open dialog hides the page from the accessibility tree: the row is looked for once it closed.
      await dialog.waitFor({ state: 'detached' });
      await member.waitFor({ state: 'detached' });
      const members = (await server.request('GET', '/v1/members', { token: owner.token })).body.data;
      assert.equal(
        members.some((m: any) => m.email === email),
        false,
      );
      // Their session ended with the membership: the next request signs them out.
      await invitee.reload();
      await invitee.getByRole('heading', { name: 'Sign in' }).waitFor();
    }),
  );

  it(
    'resends an invitation with a new link and revokes it',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const email = `bo-${randomBytes(4).toString('hex')}@example.com`;
      const created = await server.request('POST', '/v1/invites', { token: owner.token, body: { email, role: 'viewer' } });
      assert.equal(created.status, 201, created.text);
      const firstLink = await inviteLinkMailedTo(server, email);
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner, '/dashboard/members');
      const invitation = page.getByRole('table', { name: 'Invitations' }).getByRole('row', { name: new RegExp(email) });
      await invitation.getByRole('button', { name: 'Resend' }).click();
      await invitation.getByText('Sent again').waitFor();
      assert.notEqual(await inviteLinkMailedTo(server, email), firstLink);

      await invitation.getByRole('button', { name: 'Revoke' }).click();
      const dialog = page.getByRole('dialog', { name: `Revoke the invitation to ${email}?` });
      await dialog.getByText('stops working at once').waitFor();
      await dialog.getByRole('button', { name: 'Revoke invitation' }).click();
      await invitation.getByText('revoked', { exact: true }).waitFor();
      assert.equal(await invitation.getByRole('button', { name: 'Resend' }).count(), 0);

      // The revoked link says so to whoever opens it.
      const { page: invitee } = await openDashboard(t, browser, server);
      await invitee.goto((await inviteLinkMailedTo(server, email)).replace(PUBLIC_BASE_URL, server.url));
      await invitee.getByRole('alert').filter({ hasText: 'invite_expired' }).waitFor();
      assert.match((await invitee.getByRole('alert').textContent()) ?? '', /revoked/);
    }),
  );

  it(
    'lets a person who already has an account accept by signing in with it',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server, { organizationName: 'Second Co' });
      const elsewhere = await signUp(server, { organizationName: 'First Co' });
      const created = await server.request('POST', '/v1/invites', { token: owner.token, body: { email: elsewhere.email, role: 'admin' } });
      assert.equal(created.status, 201, created.text);
      const { page } = await openDashboard(t, browser, server);
      await page.goto((await inviteLinkMailedTo(server, elsewhere.email)).replace(PUBLIC_BASE_URL, server.url));
      const form = page.getByRole('form', { name: 'Accept with your account' });
      await form.getByText('already has an account').waitFor();
      assert.equal(await form.getByLabel('Your name').count(), 0, 'an existing account sets no password or name');
      await form.getByLabel('Email').fill(elsewhere.email);
      await form.getByLabel('Password').fill(elsewhere.password);
      await form.getByRole('button', { name: 'Sign in and accept' }).click();
      await page.getByText('You joined Second Co as an admin').waitFor();
      await page.getByRole('link', { name: 'Open the inbox' }).click();
      await page.getByRole('heading', { name: 'Inbox' }).waitFor();
      assert.equal(await page.getByTestId('member-role').textContent(), 'admin');
    }),
  );

  it(
    'shows a viewer the organization’s pages with no control that writes',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner, { name: 'Viewer line' });
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, viewer, `/dashboard/connections/${connection.id}`);
      await page.getByRole('heading', { name: 'Viewer line' }).waitFor();
      for (const name of ['Sync with the provider', 'Re-authorise', 'Disconnect']) assert.equal(await page.getByRole('button', { name }).count(), 0, name);
      assert.deepEqual(await unlabelledControls(page), []);

      await page.goto('/dashboard/members');
      await page.getByRole('row', { name: new RegExp(owner.email) }).waitFor();
      await page.getByText('Viewers read the inbox and settings').waitFor();
      assert.equal(
        await page
          .getByRole('button')
          .filter({ hasText: /Remove|Change role|Make owner|Send invite|Resend|Revoke/ })
          .count(),
        0,
      );
      assert.equal(await page.getByRole('combobox').count(), 0);
      assert.equal(await page.getByRole('heading', { name: 'Invitations' }).count(), 0);
      assert.deepEqual(await unlabelledControls(page), []);

      await page.getByRole('link', { name: 'Usage' }).click();
      await page.getByRole('table', { name: 'Meters' }).waitFor();
      assert.deepEqual(await unlabelledControls(page), []);

      // Billing is for owners and admins: the page shows the API's refusal, and nothing to press.
      await page.goto('/dashboard/billing');
      await page.getByRole('alert').filter({ hasText: 'role_insufficient' }).waitFor();
      assert.equal(await page.getByRole('button', { name: /Upgrade|Manage billing/ }).count(), 0);
      assert.deepEqual(await unlabelledControls(page), []);
    }),
  );

  // Last: it moves the shared server's clock past the 10 minutes a recent sign-in counts for.
  it(
    'hands the organization to an admin, asking for the password once the sign-in is not recent',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Members' }).click();
      server.clock.advance(11 * 60_000);
      const row = page.getByRole('table', { name: 'Members' }).getByRole('row', { name: new RegExp(admin.email) });
      await row.getByRole('button', { name: 'Make owner' }).click();
      const dialog = page.getByRole('dialog', { name: /the owner\?$/ });
      await dialog.getByText('You become an admin').waitFor();
      await dialog.getByRole('button', { name: 'Transfer ownership' }).click();
      await dialog.getByLabel('Your password').fill(owner.password);
      await dialog.getByRole('button', { name: 'Transfer ownership' }).click();
      await dialog.waitFor({ state: 'detached' });
      await row.getByRole('cell', { name: 'owner', exact: true }).waitFor();
      // The session's token was renewed with the new role: the page now offers an admin's controls.
      await page.getByTestId('member-role').getByText('admin').waitFor();
      assert.equal(await page.getByRole('button', { name: 'Make owner' }).count(), 0);
      const members = (await server.request('GET', '/v1/members', { token: admin.token })).body.data;
      assert.equal(members.find((m: any) => m.id === admin.memberId).role, 'owner');
    }),
  );
});
