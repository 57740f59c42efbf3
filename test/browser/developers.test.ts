/**
 * The Developers pages in a real browser: API keys (shown once, copied, revoked, rotated), webhook
 * endpoints against a real receiver (test ping, deliveries, replay, secret rotation, deletion), the
 * audit log and its filters, authorized apps after an OAuth consent given on the server's own
 * consent page (approved once, denied once), and the roles that may not see any of it.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { verifyWebhookSignature } from '../../src/events/webhook-signature.ts';
import { addMember, createConnection, createKey, signUp, type SignedUp } from '../factories.ts';
import type { TestServer } from '../harness.ts';
import { startReceiver } from '../receiver.ts';
import { browserTest, dashboardSuite, openDashboard, signIn, unlabelledControls } from './browser.ts';

/** Where the OAuth app "lives": the browser is stopped there, never sent anywhere. */
const REDIRECT_URI = 'http://127.0.0.1:4567/callback';

const identityWith = (server: TestServer, token: string) => server.request('GET', '/v1/identity', { token });

async function openDevelopers(page: Page, member: { email: string; password: string }) {
  await signIn(page, member);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Developers' }).click();
  await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
}

const tab = (page: Page, name: string) => page.getByRole('navigation', { name: 'Developers' }).getByRole('link', { name });

describe('dashboard: developers', () => {
  const setup = dashboardSuite();

  it(
    'creates an API key that is shown once and copied, then revokes it: the API refuses it from then on',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const { page, context } = await openDashboard(t, browser, server);
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
      await openDevelopers(page, owner);
      await page.getByText('No API key yet').waitFor();
      assert.deepEqual(await unlabelledControls(page), [], 'the API keys page');

      await page.getByRole('button', { name: 'New API key' }).click();
      const dialog = page.getByRole('dialog', { name: 'Create an API key' });
      await dialog.getByLabel('Name').fill('CRM sync');
      // Organization keys start with their default scopes ticked; one is taken away.
      assert.equal(await dialog.getByLabel('keys:write').isChecked(), false);
      await dialog.getByLabel('automations:write').uncheck();
      assert.deepEqual(await unlabelledControls(page), [], 'the create-key dialog');
      await dialog.getByRole('button', { name: 'Create key' }).click();

      const secret = page.getByTestId('secret-value');
      const key = (await secret.textContent()) ?? '';
      assert.match(key, /^cok_live_[0-9A-Za-z]{32}$/);
      await page.getByRole('button', { name: 'Copy' }).click();
      await page.getByRole('button', { name: 'Copied' }).waitFor();
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), key);
      assert.equal((await identityWith(server, key)).status, 200, 'the key shown works');
      const stored = (await server.request('GET', '/v1/api-keys', { token: owner.token })).body.data[0];
      assert.equal(stored.name, 'CRM sync');
      assert.ok(!stored.scopes.includes('automations:write') && stored.scopes.includes('messages:write'));

      // Once: dismissed, or the page read again, it is nowhere; the row shows only its hint.
      await page.getByRole('button', { name: 'I have stored it' }).click();
      await secret.waitFor({ state: 'detached' });
      await page.reload();
      const row = page.getByRole('row', { name: /CRM sync/ });
      await row.waitFor();
      assert.match((await row.textContent()) ?? '', new RegExp(`cok_live_…${key.slice(-4)}`));
      assert.ok(!(await page.content()).includes(key), 'the full key is not on the page any more');

      await row.getByRole('button', { name: 'Revoke' }).click();
      const confirm = page.getByRole('dialog', { name: 'Revoke CRM sync?' });
      assert.match((await confirm.textContent()) ?? '', /stops working at once.*refused \(401\)/);
      await confirm.getByRole('button', { name: 'Revoke key' }).click();
      await page.getByText('No API key yet').waitFor();
      const refused = await identityWith(server, key);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error.code, 'credential_revoked');
      await page.getByLabel('Show').selectOption('revoked');
      assert.match((await page.getByRole('row', { name: /CRM sync/ }).textContent()) ?? '', /revoked/);
    }),
  );

  it(
    'creates a connection key and rotates it: the replacement is shown once, the old key stops at once, and its history is in the audit log',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner, { name: 'Shop line' });
      const { page } = await openDashboard(t, browser, server);
      await openDevelopers(page, owner);

      await page.getByRole('button', { name: 'New API key' }).click();
      const dialog = page.getByRole('dialog', { name: 'Create an API key' });
      await dialog.getByLabel('Connection key').check();
      assert.equal(await dialog.getByLabel('Connection', { exact: true }).inputValue(), connection.id);
      // A connection key cannot hold key management at all: it is not offered.
      assert.equal(await dialog.getByLabel('keys:write').count(), 0);
      await dialog.getByRole('button', { name: 'Create key' }).click();
      const first = (await page.getByTestId('secret-value').textContent()) ?? '';
      assert.match(first, /^csk_live_/);
      await page.getByRole('button', { name: 'I have stored it' }).click();

      const row = page.getByRole('row', { name: /Only Shop line/ });
      await row.getByRole('button', { name: 'Rotate' }).click();
      const confirm = page.getByRole('dialog', { name: /^Rotate csk_live_/ });
      assert.match((await confirm.textContent()) ?? '', /revoked at the same moment: there is no overlap/);
      await confirm.getByRole('button', { name: 'Rotate key' }).click();
      const replacement = page.getByRole('region', { name: 'The replacement key' });
      await replacement.waitFor();
      const second = (await replacement.getByTestId('secret-value').textContent()) ?? '';
      assert.match(second, /^csk_live_/);
      assert.notEqual(second, first);
      assert.match((await replacement.textContent()) ?? '', /was revoked at the same moment/);
      assert.equal((await identityWith(server, first)).body.error.code, 'credential_revoked');
      assert.equal((await identityWith(server, second)).status, 200);
      await page.getByRole('button', { name: 'I have stored it' }).click();

      // The old key's history: created, then rotated (the audit log filtered by the key's id).
      await page.getByLabel('Show').selectOption('revoked');
      await page
        .getByRole('row', { name: /revoked/ })
        .getByRole('link', { name: /^History of/ })
        .click();
      await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
      await page.getByRole('row', { name: /api_key\.rotated/ }).waitFor();
      assert.equal(await page.getByRole('row', { name: /api_key\.created/ }).count(), 1);
      assert.match(page.url(), /target_id=key_/);
    }),
  );

  it(
    'shows who did what in the audit log, and filters it by action and by target',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const admin = await addMember(server, owner.organizationId, 'admin');
      const mine = await createKey(server, owner.token, { kind: 'organization', mode: 'live', name: 'Mine' });
      await createKey(server, admin.token, { kind: 'organization', mode: 'test', name: 'Theirs' });
      const { page } = await openDashboard(t, browser, server);
      await openDevelopers(page, owner);
      await tab(page, 'Audit log').click();
      await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
      await page
        .getByRole('row', { name: /member\.created/ })
        .first()
        .waitFor();
      assert.deepEqual(await unlabelledControls(page), [], 'the audit log');

      await page.getByLabel('Action').fill('api_key.created');
      await page.getByRole('button', { name: 'Filter' }).click();
      const rows = page.getByRole('row', { name: /api_key\.created/ });
      await page.waitForURL(/action=api_key.created/);
      await page.getByRole('row', { name: /organization\.created/ }).waitFor({ state: 'detached' });
      await rows.nth(1).waitFor();
      assert.equal(await rows.count(), 2);
      // Who: the signed-in owner is "You", the admin by their email; what the key was made as.
      const ours = page.getByRole('row', { name: new RegExp(mine.id) });
      assert.match((await ours.textContent()) ?? '', /You/);
      assert.match((await ours.textContent()) ?? '', /modelive/);
      assert.match((await page.getByRole('row', { name: /mode\s*test/ }).textContent()) ?? '', new RegExp(admin.email));

      // A target's id in a row narrows to that target; clearing shows everything again.
      await ours.getByRole('button', { name: `Show only entries about ${mine.id}` }).click();
      await page.waitForURL(new RegExp(`target_id=${mine.id}`));
      await page.getByRole('row', { name: /mode\s*test/ }).waitFor({ state: 'detached' });
      await rows.first().waitFor();
      assert.equal(await rows.count(), 1);
      await page.getByRole('button', { name: 'Clear filters' }).click();
      await page.getByRole('row', { name: /organization\.created/ }).waitFor();
      // A filter that matches nothing says so.
      await page.getByLabel('Action').fill('nothing.happened');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.getByText('No entry matches these filters').waitFor();
    }),
  );

  it(
    'adds a webhook endpoint for a real receiver, pings it, replays a delivery, changes it, rotates its secret and deletes it',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const receiver = await startReceiver(t);
      receiver.respond(202);
      const { page } = await openDashboard(t, browser, server);
      await openDevelopers(page, owner);
      await tab(page, 'Webhooks').click();
      await page.getByText('No endpoint yet').waitFor();
      assert.deepEqual(await unlabelledControls(page), [], 'the webhooks page');

      await page.getByRole('button', { name: 'New endpoint' }).click();
      const dialog = page.getByRole('dialog', { name: 'Add a webhook endpoint' });
      await dialog.getByLabel('Endpoint URL').fill(receiver.url);
      await dialog.getByLabel('Description').fill('Order system');
      await dialog.getByLabel('Only the types chosen below').check();
      await dialog.getByLabel('message.received').check();
      await dialog.getByLabel('conversation.created').check();
      assert.deepEqual(await unlabelledControls(page), [], 'the new-endpoint dialog');
      await dialog.getByRole('button', { name: 'Add endpoint' }).click();
      const secret = (await page.getByTestId('secret-value').textContent()) ?? '';
      assert.match(secret, /^whsec_/);
      await page.getByRole('button', { name: 'I have stored it' }).click();
      const listed = (await server.request('GET', '/v1/webhook-endpoints', { token: owner.token })).body.data[0];
      assert.deepEqual([...listed.events].sort(), ['conversation.created', 'message.received']);

      await page.getByRole('link', { name: receiver.url }).click();
      await page.getByRole('heading', { name: 'Webhook endpoint', level: 1 }).waitFor();
      assert.deepEqual(await unlabelledControls(page), [], 'the endpoint page');

      // The ping reaches the receiver signed with the secret that was shown, and its answer is shown.
      await page.getByRole('button', { name: 'Send test ping' }).click();
      const result = page.getByRole('status', { name: 'Test result' });
      await result.waitFor();
      assert.match((await result.textContent()) ?? '', /succeeded\s*HTTP 202.*in \d+ ms.*ok/s);
      assert.equal(receiver.received.length, 1);
      const ping = receiver.received[0]!;
      assert.equal(JSON.parse(ping.body).type, 'ping');
      const signature = verifyWebhookSignature(ping.body, ping.headers['service-signature'] as string, [secret], { now: server.clock.now() });
      assert.ok(signature.valid, 'signed with the secret shown once');

      const delivered = page.getByRole('row', { name: /ping.*HTTP 202/ });
      await delivered.waitFor();
      assert.match((await delivered.textContent()) ?? '', /#1.*\d+ ms/);

      // Replayed while the receiver fails: a new attempt, marked as a replay, with the receiver's status.
      receiver.respond(503);
      await delivered.getByRole('button', { name: /^Replay ping/ }).click();
      const replayed = page.getByRole('row', { name: /replay.*HTTP 503/ });
      await replayed.waitFor();
      assert.match((await replayed.textContent()) ?? '', /failed/);
      assert.equal(receiver.received.length, 2);
      assert.equal(receiver.received[1]!.body, ping.body, 'the same event, sent again');
      // Only the failures: the list is read again (rows leave while it loads), then shows the one.
      await page.getByLabel('Show').selectOption('failed');
      await page.getByRole('row', { name: /HTTP 202/ }).waitFor({ state: 'detached' });
      await page.getByRole('row', { name: /HTTP 503/ }).waitFor();
      assert.equal(await page.getByRole('row', { name: /HTTP 202/ }).count(), 0);

      // Every event type now, and disabled then enabled again.
      await page.getByLabel('Every event type').check();
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText('Saved.').waitFor();
      const endpointPath = `/v1/webhook-endpoints/${listed.id}`;
      assert.deepEqual((await server.request('GET', endpointPath, { token: owner.token })).body.events, ['*']);
      await page.getByRole('button', { name: 'Disable', exact: true }).click();
      await page.getByRole('dialog', { name: 'Disable this endpoint?' }).getByRole('button', { name: 'Disable endpoint' }).click();
      await page.getByText('Disabled by a member of the organization.').first().waitFor();
      await tab(page, 'Webhooks').click();
      await page.getByRole('row', { name: /Order system.*disabled.*Disabled by a member/ }).waitFor();
      await page.getByRole('link', { name: receiver.url }).click();
      await page.getByRole('button', { name: 'Enable' }).click();
      await page.getByRole('button', { name: 'Disable', exact: true }).waitFor();
      assert.equal((await server.request('GET', endpointPath, { token: owner.token })).body.status, 'enabled');

      // A new secret, shown once; the old one keeps signing for the overlap.
      await page.getByRole('button', { name: 'Rotate secret' }).click();
      const rotate = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
      assert.match((await rotate.textContent()) ?? '', /keeps signing too for 24 hours/);
      await rotate.getByRole('button', { name: 'Rotate secret' }).click();
      const rotated = page.getByRole('region', { name: 'New signing secret' });
      const newSecret = (await rotated.getByTestId('secret-value').textContent()) ?? '';
      assert.match(newSecret, /^whsec_/);
      assert.notEqual(newSecret, secret);
      await page.getByRole('button', { name: 'I have stored it' }).click();
      await page.getByText(/deliveries carry a signature with the previous secret too until/).waitFor();

      await page.getByRole('button', { name: 'Delete endpoint' }).click();
      const remove = page.getByRole('dialog', { name: 'Delete this endpoint?' });
      assert.match((await remove.textContent()) ?? '', /delivery history is deleted with it/);
      await remove.getByRole('button', { name: 'Delete endpoint' }).click();
      await page.getByText('No endpoint yet').waitFor();
      assert.equal((await server.request('GET', endpointPath, { token: owner.token })).status, 404);
    }),
  );

  it(
    'approves an app on the consent page, lists it under authorized apps and revokes it: its token stops working; a denial returns access_denied',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const registered = await server.request('POST', '/oauth/register', { body: { client_name: 'Acme CRM', redirect_uris: [REDIRECT_URI] } });
      assert.equal(registered.status, 201, registered.text);
      const clientId: string = registered.body.client_id;
      const { page } = await openDashboard(t, browser, server);
      // The app's callback: the browser is stopped there and the test reads where it was sent.
      await page.route(`${REDIRECT_URI}**`, (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'back at the app' }));

      const approved = await authorizeInBrowser(page, server, clientId, owner, 'Authorize');
      const code = approved.searchParams.get('code');
      assert.ok(code, `a code comes back: ${approved.href}`);
      assert.equal(approved.searchParams.get('iss'), server.config.publicBaseUrl);
      const token = await exchange(server, clientId, code, approved.verifier);
      assert.equal((await identityWith(server, token)).status, 200);

      const denied = await authorizeInBrowser(page, server, clientId, owner, 'Deny');
      assert.equal(denied.searchParams.get('error'), 'access_denied');
      assert.equal(denied.searchParams.get('code'), null);
      assert.equal(denied.searchParams.get('state'), denied.state);

      await openDevelopers(page, owner);
      await tab(page, 'Authorized apps').click();
      const row = page.getByRole('row', { name: /Acme CRM/ });
      await row.waitFor();
      assert.match((await row.textContent()) ?? '', /unverified.*You.*The REST API/);
      assert.deepEqual(await unlabelledControls(page), [], 'the authorized apps page');
      await row.getByRole('button', { name: 'Revoke' }).click();
      const confirm = page.getByRole('dialog', { name: 'Revoke Acme CRM?' });
      assert.match((await confirm.textContent()) ?? '', /tokens stop working/);
      await confirm.getByRole('button', { name: 'Revoke access' }).click();
      await page.getByText('No app is authorized').waitFor();
      assert.equal((await identityWith(server, token)).status, 401);
    }),
  );

  it(
    'offers viewers and agents no Developers link, and a direct visit shows the API’s refusal',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      for (const role of ['viewer', 'agent'] as const) {
        const member = await addMember(server, owner.organizationId, role);
        const { page } = await openDashboard(t, browser, server);
        await signIn(page, member);
        assert.equal(await page.getByRole('link', { name: 'Developers' }).count(), 0, `${role}: no Developers link`);
        for (const [path, code] of [
          ['api-keys', 'role_insufficient'],
          ['audit-log', 'role_insufficient'],
          ...(role === 'agent' ? [['webhooks', 'scope_missing']] : []),
        ]) {
          await page.goto(`/dashboard/developers/${path}`);
          const alert = page.getByRole('alert');
          await alert.waitFor();
          assert.match((await alert.textContent()) ?? '', new RegExp(`\\(${code}\\)`), `${role} on ${path}`);
        }
        // Viewers read the webhooks (webhooks:read), with nothing to change.
        if (role === 'viewer') {
          await page.goto('/dashboard/developers/webhooks');
          await page.getByText('No endpoint yet. Owners and admins add them.').waitFor();
          assert.equal(await page.getByRole('button', { name: 'New endpoint' }).count(), 0);
        }
      }
    }),
  );
});

/** Opens an authorization request (PKCE S256) in the browser, signs in on the consent page and decides. */
async function authorizeInBrowser(page: Page, server: TestServer, clientId: string, person: SignedUp, decision: 'Authorize' | 'Deny') {
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(8).toString('hex');
  const url = new URL('/oauth/authorize', server.url);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: 'messages:read contacts:read',
    state,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  await page.goto(url.href);
  await page.getByRole('heading', { name: 'Connect Acme CRM' }).waitFor();
  assert.match((await page.content()) ?? '', /Unverified app/);
  await page.getByLabel('Email').fill(person.email);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: decision }).click();
  await page.waitForURL((target) => target.href.startsWith(REDIRECT_URI));
  return Object.assign(new URL(page.url()), { verifier, state });
}

/** The app's side: the code and the verifier for an access token. */
async function exchange(server: TestServer, clientId: string, code: string, verifier: string): Promise<string> {
  const response = await server.request('POST', '/oauth/token', {
    rawBody: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: clientId,
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(response.status, 200, response.text);
  return response.body.access_token;
}
