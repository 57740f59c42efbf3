/**
 * The inbox in a real browser, kept current by the live stream: a customer's message reaching two
 * members' browsers without a reload, the ticks of a reply moving as the provider reports, the
 * stream surviving the token's expiry without missing what happened meanwhile, a deep link to a
 * thread reloaded, and the filters narrowing the list.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Page, Route } from 'playwright-core';
import type { TestServer } from '../harness.ts';
import { addMember, createConnection, defineTemplate, inbound, newCustomer, settle, signUp } from '../factories.ts';
import { browserTest, dashboardSuite, openDashboard, signIn, unlabelledControls } from './browser.ts';

/** A customer writes `text` from `from`, through the sandbox and the provider's webhook, settled. */
async function customerWrites(server: TestServer, connection: { phone_number_id: string }, from: string, text: string) {
  return inbound(server, connection, { from, text });
}

/** A 1×1 PNG: a photo the browser can decode. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

function rows(page: Page) {
  return page.getByRole('listbox', { name: 'Conversations' }).getByRole('option');
}

function row(page: Page, name: string | RegExp) {
  return page.getByRole('listbox', { name: 'Conversations' }).getByRole('option', { name });
}

function message(page: Page, text: string) {
  return page.getByTestId('message').filter({ hasText: text });
}

async function waitLive(page: Page): Promise<void> {
  await page.locator('[data-testid="live-status"][data-state="live"]').waitFor();
}

describe('inbox, live', () => {
  const setup = dashboardSuite();

  it(
    "shows a customer's message in two members' browsers as it arrives, without a reload",
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const agent = await addMember(server, owner.organizationId, 'agent');
      const connection = await createConnection(server, owner);
      const ada = newCustomer();
      const first = await customerWrites(server, connection, ada, 'Hello, is anyone there?');
      await server.request('PATCH', `/v1/contacts/${first.contact_id}`, { token: owner.token, body: { name: 'Ada Customer' } });

      const { page: ownerPage } = await openDashboard(t, browser, server);
      const { page: agentPage } = await openDashboard(t, browser, server);
      await signIn(ownerPage, owner);
      await signIn(agentPage, agent);
      await Promise.all([waitLive(ownerPage), waitLive(agentPage)]);

      // The owner opens the thread; the agent keeps to the list.
      await row(ownerPage, /Ada Customer/).click();
      await ownerPage.getByRole('heading', { name: 'Ada Customer' }).waitFor();
      await message(ownerPage, 'Hello, is anyone there?').waitFor();
      await row(agentPage, /Ada Customer/).waitFor();

      await customerWrites(server, connection, ada, 'My parcel has not arrived');
      await message(ownerPage, 'My parcel has not arrived').waitFor();
      await row(agentPage, /My parcel has not arrived/).waitFor();
      // The owner's browser has the thread open, so it marked the customer's latest message read.
      await ownerPage.locator(`[data-conversation-id="${first.conversation_id}"]:not([data-unread])`).waitFor();
      const read = await server.request('GET', `/v1/conversations/${first.conversation_id}?expand=last_message`, { token: owner.token });
      assert.equal(read.body.last_message.status, 'read');

      // A customer never seen before: a new conversation, at the top of both lists.
      await customerWrites(server, connection, newCustomer(), 'A brand new question');
      for (const page of [ownerPage, agentPage]) {
        const top = rows(page).first();
        await top.filter({ hasText: 'A brand new question' }).waitFor();
        assert.equal(await top.getAttribute('data-unread'), 'true');
      }
      assert.deepEqual(await unlabelledControls(ownerPage), []);
    }),
  );

  it(
    'moves the ticks of a reply from sent to delivered to read, and shows why one failed',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      const received = await customerWrites(server, connection, newCustomer(), 'Can you confirm my booking?');
      // The provider's statuses come when this test says so, not in the sandbox's own walk.
      await sandboxBehaviour(server, { auto_status: false });
      t.after(() => sandboxBehaviour(server, { auto_status: true }));

      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner, `/dashboard/inbox/${received.conversation_id}`);
      await message(page, 'Can you confirm my booking?').waitFor();
      await waitLive(page);

      const sent = await reply(server, owner.token, received.contact_id, connection.id, 'Confirmed for Friday.');
      const ticks = message(page, 'Confirmed for Friday.').getByTestId('message-status');
      await ticks.and(page.locator('[data-status="sent"]')).waitFor();
      const providerId = await providerMessageId(server, owner.token, sent.id);
      for (const status of ['delivered', 'read'] as const) {
        await providerStatus(server, { message_id: providerId, status });
        await ticks.and(page.locator(`[data-status="${status}"]`)).waitFor();
      }
      assert.equal(await ticks.textContent(), '✓✓Read');

      const failed = await reply(server, owner.token, received.contact_id, connection.id, 'This one will not arrive.');
      await message(page, 'This one will not arrive.').getByTestId('message-status').and(page.locator('[data-status="sent"]')).waitFor();
      await providerStatus(server, {
        message_id: await providerMessageId(server, owner.token, failed.id),
        status: 'failed',
        error: { code: 131026, title: 'Message undeliverable' },
      });
      const error = message(page, 'This one will not arrive.').getByTestId('message-error');
      await error.waitFor();
      assert.match((await error.textContent()) ?? '', /Not delivered: .*undeliverable.*\(131026\)/i);
    }),
  );

  it(
    'renews the session silently when the stream expires, and resumes it with nothing missed',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      const from = newCustomer();
      const first = await customerWrites(server, connection, from, 'Before the expiry');
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner, `/dashboard/inbox/${first.conversation_id}`);
      await message(page, 'Before the expiry').waitFor();
      await waitLive(page);
      // One event received live: the stream has a resume point.
      await customerWrites(server, connection, from, 'Seen live');
      await message(page, 'Seen live').waitFor();

      // The next connection is held until a message has been written while no stream was open. The
      // route is in place before the clock moves, not installed while the stream expires and renews.
      let release: () => void = () => undefined;
      let holding: (route: Route) => void = () => undefined;
      const held = new Promise<Route>((resolve) => (holding = resolve));
      await page.route('**/v1/stream', (route) => {
        holding(route);
        return new Promise<void>((done) => (release = done)).then(() => route.continue());
      });
      const renewed = page.waitForResponse((response) => response.url().endsWith('/auth/refresh') && response.status() === 200);
      // Past the token's 15 minutes on the server's clock: the server ends the stream (stream.expired).
      server.clock.advance(16 * 60_000);
      await renewed;
      const reconnect = await held;
      assert.match(reconnect.request().headers()['last-event-id'] ?? '', /^evt_/);
      await page.locator('[data-testid="live-status"][data-state="reconnecting"]').waitFor();

      await customerWrites(server, connection, from, 'Written while the stream was down');
      release();
      await message(page, 'Written while the stream was down').waitFor();
      await waitLive(page);
      // Still signed in, and still current: a message after the resume arrives too.
      await customerWrites(server, connection, from, 'After the resume');
      await message(page, 'After the resume').waitFor();
      assert.equal(await page.getByRole('heading', { name: 'Sign in' }).count(), 0);
      assert.equal(await message(page, 'Written while the stream was down').count(), 1);
    }),
  );

  it(
    'reloads a deep link to a conversation and shows that thread',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      const other = await customerWrites(server, connection, newCustomer(), 'Another thread');
      const from = newCustomer();
      const wanted = await customerWrites(server, connection, from, 'The thread we link to');
      await customerWrites(server, connection, from, 'Its second message');
      assert.notEqual(other.conversation_id, wanted.conversation_id);

      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner, `/dashboard/inbox/${wanted.conversation_id}`);
      await message(page, 'Its second message').waitFor();
      await page.reload();
      await message(page, 'The thread we link to').waitFor();
      await message(page, 'Its second message').waitFor();
      assert.equal(await message(page, 'Another thread').count(), 0);
      assert.equal(await rows(page).and(page.locator('[aria-selected="true"]')).getAttribute('data-conversation-id'), wanted.conversation_id);
      assert.equal(await page.getByTestId('window-status').getAttribute('data-state'), 'open');
    }),
  );

  it(
    'narrows the list with the filters, kept in the URL',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      const mine = await customerWrites(server, connection, newCustomer(), 'Assigned to me');
      const closed = await customerWrites(server, connection, newCustomer(), 'Already closed');
      const tagged = await customerWrites(server, connection, newCustomer(), 'Tagged vip');
      await customerWrites(server, connection, newCustomer(), 'Nothing special');
      const api = (method: string, path: string, body: unknown) => server.request(method, path, { token: owner.token, body });
      await api('POST', `/v1/conversations/${mine.conversation_id}/assign`, { member_id: owner.memberId });
      await api('PATCH', `/v1/conversations/${closed.conversation_id}`, { state: 'closed' });
      await api('POST', `/v1/conversations/${tagged.conversation_id}/tags`, { tags: ['vip'] });

      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      await row(page, /Nothing special/).waitFor();
      assert.equal(await rows(page).count(), 4);

      const shows = async (text: string) => {
        await row(page, new RegExp(text)).waitFor();
        await rows(page).nth(1).waitFor({ state: 'detached' });
      };
      await page.getByLabel('State').selectOption('closed');
      await shows('Already closed');
      assert.match(page.url(), /state=closed/);
      await page.getByLabel('State').selectOption('');
      await page.getByLabel('Assignee').selectOption('me');
      await shows('Assigned to me');
      assert.match(page.url(), /assignee=me/);
      await page.getByLabel('Assignee').selectOption('');
      await page.getByLabel('Tag').fill('vip');
      await page.getByLabel('Tag').press('Enter');
      await shows('Tagged vip');
      // The filtered view survives a reload.
      await page.reload();
      await shows('Tagged vip');
      assert.equal(await page.getByLabel('Tag').inputValue(), 'vip');
      await page.getByLabel('Tag').fill('nobody-has-this');
      await page.getByLabel('Tag').press('Enter');
      await page.getByText('No conversations match these filters.').waitFor();

      // Live changes respect the filters: a conversation tagged now joins the filtered list.
      await page.getByLabel('Tag').fill('vip');
      await page.getByLabel('Tag').press('Enter');
      await shows('Tagged vip');
      await waitLive(page);
      await api('POST', `/v1/conversations/${mine.conversation_id}/tags`, { tags: ['vip'] });
      await row(page, /Assigned to me/).waitFor();
      assert.equal(await rows(page).count(), 2);
      // And one that no longer matches leaves it.
      await server.request('DELETE', `/v1/conversations/${tagged.conversation_id}/tags/vip`, { token: owner.token });
      await row(page, /Tagged vip/).waitFor({ state: 'detached' });
      assert.equal(await rows(page).count(), 1);
    }),
  );

  it(
    "shows a thread's photos, templates, replies and reactions, and the window closing",
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      const from = newCustomer();
      const question = await customerWrites(server, connection, from, 'Which colour is it?');
      const sent = await reply(server, owner.token, question.contact_id, connection.id, 'It is red.');
      const providerId = await providerMessageId(server, owner.token, sent.id);
      await inbound(server, connection, { from, type: 'image', image: { mime_type: 'image/png', content_base64: PNG, caption: 'Like this one?' } });
      await inbound(server, connection, { from, text: 'Perfect, thanks', context: { message_id: providerId } });
      await inbound(server, connection, { from, type: 'reaction', reaction: { message_id: providerId, emoji: '👍' } });
      await defineTemplate(server, owner.token, connection, { name: 'order_update', category: 'utility', text: 'Order {{1}} shipped', examples: ['A-1'] });
      const template = await server.request('POST', '/v1/messages', {
        token: owner.token,
        headers: { 'idempotency-key': randomUUID() },
        body: {
          connection_id: connection.id,
          contact_id: question.contact_id,
          type: 'template',
          template: { name: 'order_update', language: 'en_US', body: ['A-1'] },
        },
      });
      assert.equal(template.status, 201, template.text);
      await settle(server);

      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner, `/dashboard/inbox/${question.conversation_id}`);
      // The photo is fetched with the bearer into a blob: URL, and decodes.
      const photo = page.getByRole('img', { name: 'Like this one?' });
      await photo.waitFor();
      assert.match((await photo.getAttribute('src')) ?? '', /^blob:/);
      assert.ok(await photo.evaluate((image: any) => image.decode().then(() => image.naturalWidth > 0)));
      const answer = message(page, 'Perfect, thanks');
      assert.equal(await answer.getByTestId('reply-quote').textContent(), 'It is red.');
      assert.equal(await message(page, 'It is red.').getByRole('list', { name: 'Reactions' }).textContent(), '👍');
      await message(page, 'order_update').waitFor();
      assert.match((await message(page, 'order_update').textContent()) ?? '', /Template.*order_update.*A-1/);
      // Reactions are shown on their message, not as messages of their own.
      assert.equal(await page.getByTestId('message').count(), 5);
      assert.equal(await page.getByTestId('window-status').getAttribute('data-state'), 'open');
      assert.deepEqual(await unlabelledControls(page), []);

      // The customer's last message 25 hours back: the window is closed, and the thread says what that means.
      const dayAgo = new Date(Date.now() - 25 * 3600_000).toISOString();
      await server.app.store.db.updateTable('conversations').set({ last_inbound_at: dayAgo }).where('id', '=', question.conversation_id).execute();
      await page.reload();
      const window = page.getByTestId('window-status');
      await window.and(page.locator('[data-state="closed"]')).waitFor();
      assert.match((await window.textContent()) ?? '', /closed.*only templates can be sent/);
    }),
  );

  it(
    'moves through the list with the keyboard',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      for (const text of ['Oldest', 'Middle', 'Newest']) await customerWrites(server, connection, newCustomer(), text);
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      const list = page.getByRole('listbox', { name: 'Conversations' });
      await row(page, /Oldest/).waitFor();
      await list.focus();
      // j opens the next conversation (the first, when none is open), k the previous.
      await page.keyboard.press('j');
      await message(page, 'Newest').waitFor();
      await page.keyboard.press('j');
      await message(page, 'Middle').waitFor();
      await page.keyboard.press('k');
      await message(page, 'Newest').waitFor();
      // The arrows move the highlight; Enter opens it.
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Enter');
      await message(page, 'Oldest').waitFor();
      assert.equal(await row(page, /Oldest/).getAttribute('aria-selected'), 'true');
      assert.equal(await list.getAttribute('aria-activedescendant'), await row(page, /Oldest/).getAttribute('id'));
    }),
  );
});

async function sandboxBehaviour(server: TestServer, behaviour: Record<string, unknown>): Promise<void> {
  const response = await server.request('POST', '/sandbox/control/behaviour', { body: behaviour });
  assert.equal(response.status, 200, response.text);
}

async function reply(server: TestServer, token: string, contactId: string, connectionId: string, text: string): Promise<{ id: string }> {
  const response = await server.request('POST', '/v1/messages', {
    token,
    headers: { 'idempotency-key': randomUUID() },
    body: { connection_id: connectionId, contact_id: contactId, type: 'text', text: { body: text } },
  });
  assert.equal(response.status, 201, response.text);
  await settle(server);
  return response.body;
}

async function providerMessageId(server: TestServer, token: string, messageId: string): Promise<string> {
  const response = await server.request('GET', `/v1/messages/${messageId}`, { token });
  assert.ok(response.body.provider_message_id, response.text);
  return response.body.provider_message_id;
}

async function providerStatus(server: TestServer, body: Record<string, unknown>): Promise<void> {
  const response = await server.request('POST', '/sandbox/control/status', { body });
  assert.equal(response.status, 200, response.text);
  await settle(server);
}
