/**
 * The dashboard's front door in a real browser: signing up to an empty inbox, signing out and in,
 * a deep link reloaded, a sandbox number connected from the browser, and a viewer's read-only view.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addMember, signUp } from '../factories.ts';
import { browserTest, dashboardSuite, openDashboard, signIn, unlabelledControls } from './browser.ts';

describe('dashboard sessions', () => {
  const setup = dashboardSuite();

  it(
    'signs up to an empty inbox, signs out, and signs back in',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const { page } = await openDashboard(t, browser, server);
      await page.goto('/dashboard/');
      // No session yet: the guard sends the visitor to sign-in, which links to sign-up.
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      assert.deepEqual(await unlabelledControls(page), []);
      await page.getByRole('link', { name: 'Create an organization' }).click();
      await page.getByLabel('Your name').fill('Grace Owner');
      await page.getByLabel('Organization name').fill('Browser Co');
      await page.getByLabel('Email').fill('grace@example.com');
      await page.getByLabel('Password').fill('correct horse battery staple');
      await page.getByRole('button', { name: 'Create organization' }).click();
      await page.getByRole('heading', { name: 'Inbox' }).waitFor();
      await page.getByText('No conversations yet').waitFor();
      assert.match(page.url(), /\/dashboard\/inbox/);
      assert.equal(await page.getByTestId('member-role').textContent(), 'owner');

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      // Signed out for real: a reload finds no session to resume.
      await page.reload();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.getByLabel('Email').fill('grace@example.com');
      await page.getByLabel('Password').fill('correct horse battery staple');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    }),
  );

  it(
    'shows the API’s own message when a sign-in is refused',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const { page } = await openDashboard(t, browser, server);
      await page.goto('/dashboard/sign-in');
      await page.getByLabel('Email').fill('nobody@example.com');
      await page.getByLabel('Password').fill('not the password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      const alert = page.getByRole('alert');
      await alert.waitFor();
      assert.match((await alert.textContent()) ?? '', /incorrect.*\(login_failed\)/);
      assert.match((await alert.getByRole('link').getAttribute('href')) ?? '', /\/docs\/errors\//);
    }),
  );

  it(
    'reloads a deep link in place, the session resumed from the refresh cookie',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const { page } = await openDashboard(t, browser, server);
      // A link followed while signed out comes back to where it pointed after signing in.
      await page.goto('/dashboard/connections');
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.getByLabel('Email').fill(owner.email);
      await page.getByLabel('Password').fill(owner.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Connections' }).waitFor();
      await page.reload();
      await page.getByRole('heading', { name: 'Connections' }).waitFor();
      assert.match(page.url(), /\/dashboard\/connections$/);
    }),
  );

  it(
    'connects a sandbox number and writes to it as a customer, without leaving the browser',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Connections' }).click();
      await page.getByText('No number is connected yet').waitFor();
      await page.getByLabel('Connection name').fill('Support line');
      await page.getByRole('button', { name: 'Connect number' }).click();
      const row = page.getByRole('row', { name: /Support line/ });
      await row.waitFor();
      assert.match((await row.textContent()) ?? '', /connected/);
      const listed = await server.request('GET', '/v1/connections', { token: owner.token });
      assert.equal(listed.body.data.length, 1);
      assert.equal(listed.body.data[0].name, 'Support line');

      await page.getByLabel("Customer's message").fill('Is my parcel on its way?');
      await page.getByRole('button', { name: 'Send as customer' }).click();
      await page.getByText('Delivered to the service.').waitFor();
      assert.deepEqual(await unlabelledControls(page), [], 'every control of the connections page is labelled and focusable');
      const contacts = await server.request('GET', '/v1/contacts', { token: owner.token });
      assert.equal(contacts.body.data.length, 1);
    }),
  );

  it(
    'keeps two tabs signed in through renewals: one renews, the other takes the new token',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const { page: first, newTab } = await openDashboard(t, browser, server);
      await signIn(first, owner);
      // The second tab opens the session from the cookie, which rotates it and ends the first tab's
      // token at once: the first tab must have been handed the new one.
      const second = await newTab();
      await second.goto('/dashboard/connections');
      await second.getByRole('heading', { name: 'Numbers' }).waitFor();
      await first.getByRole('link', { name: 'Connections' }).click();
      await first.getByRole('heading', { name: 'Numbers' }).waitFor();

      // Past the token's 15 minutes on the server's clock: each tab's next call is refused (401),
      // renewed once, and retried with the same idempotency key. The first tab renews; the second
      // is handed the new token (a renewal of its own would replay a rotated refresh token).
      server.clock.advance(16 * 60_000);
      const renewals: number[] = [];
      for (const tab of [first, second]) tab.on('response', (response) => void (response.url().endsWith('/auth/refresh') && renewals.push(response.status())));
      for (const [tab, name] of [
        [first, 'After expiry, first tab'],
        [second, 'After expiry, second tab'],
      ] as const) {
        await tab.getByLabel('Connection name').fill(name);
        await tab.getByRole('button', { name: 'Connect number' }).click();
        await tab.getByRole('row', { name: new RegExp(name) }).waitFor();
      }
      assert.deepEqual(renewals, [200], 'one renewal, by the first tab');
      const listed = await server.request('GET', '/v1/connections', {
        token: (await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } })).body.token,
      });
      assert.equal(listed.body.data.length, 2);
      assert.equal(await first.getByRole('heading', { name: 'Sign in' }).count(), 0);
      assert.equal(await second.getByRole('heading', { name: 'Sign in' }).count(), 0);
    }),
  );

  it(
    'offers a viewer no way to connect a number, and the API refuses one anyway',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, viewer);
      assert.equal(await page.getByTestId('member-role').textContent(), 'viewer');
      await page.getByRole('link', { name: 'Connections' }).click();
      await page.getByRole('heading', { name: 'Numbers' }).waitFor();
      assert.equal(await page.getByRole('button', { name: 'Connect number' }).count(), 0);
      const refused = await server.request('POST', '/v1/connections', { token: viewer.token, body: { code: 'x' } });
      assert.equal(refused.status, 403);
    }),
  );
});
