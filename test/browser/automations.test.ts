/**
 * The automation pages in a real browser: an automation written, versioned, compared, deployed with
 * an in-flight choice, disabled, enabled and deleted with its active run; a stale version explained;
 * a run's timeline and cancel; a dry run's simulated log; approvals decided from the queue; connector
 * accounts connected against an API on loopback and disconnected; and an agent offered none of it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { addMember, createConnection, inbound, newCustomer, settle, signUp, type SignedUp } from '../factories.ts';
import { startApi } from '../fake-api.ts';
import type { TestServer } from '../harness.ts';
import { browserTest, dashboardSuite, openDashboard, signIn, unlabelledControls } from './browser.ts';

type Json = Record<string, any>;

/** Asks, waits for the answer, thanks: a run waits at `wait` once the first message is sent. */
const askAndThank = (thanks: string) => ({
  trigger: { type: 'message_received' },
  start: 'ask',
  steps: [
    { id: 'ask', type: 'send_message', text: 'Hi! What is your order number?', next: 'wait' },
    { id: 'wait', type: 'wait_for_reply', timeout_seconds: 3600, branches: { replied: 'thanks' } },
    { id: 'thanks', type: 'send_message', text: thanks },
  ],
});

/** The order-status example of docs/automations.md, shortened: an input, a question, a branch on the reply. */
const orderStatus = {
  trigger: { type: 'api' },
  input_schema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
  start: 'shipped',
  steps: [
    { id: 'shipped', type: 'send_message', text: 'Your order {{ input.order_id }} has shipped. Will you be home?', next: 'ask' },
    { id: 'ask', type: 'wait_for_reply', timeout_seconds: 3600, save_as: 'answer', branches: { replied: 'check', timeout: 'no_answer' } },
    {
      id: 'check',
      type: 'condition',
      branches: [{ when: "has(vars.answer.text) && vars.answer.text.body.lowerAscii() == 'yes'", next: 'confirm' }],
      default: 'no_answer',
    },
    { id: 'confirm', type: 'send_message', text: 'Great, see you tomorrow with order {{ input.order_id }}!', next: 'confirmed' },
    { id: 'confirmed', type: 'end', outcome: 'confirmed' },
    { id: 'no_answer', type: 'end', outcome: 'no_answer' },
  ],
};

/** A customer's message asks an owner or admin whether to send them the offer. */
const offerNeedsApproval = {
  trigger: { type: 'message_received' },
  start: 'approve',
  steps: [
    {
      id: 'approve',
      type: 'request_approval',
      title: 'Send the offer to {{ contact.profile_name }}?',
      action_step: 'offer',
      approvers: { roles: ['owner', 'admin'] },
      branches: { rejected: 'done' },
    },
    { id: 'offer', type: 'send_message', text: 'Here is your 10% offer, {{ contact.profile_name }}.', next: 'done' },
    { id: 'done', type: 'end', outcome: 'answered' },
  ],
};

describe('dashboard: automations, runs, approvals and connector accounts', () => {
  const setup = dashboardSuite();

  async function call(server: TestServer, token: string, method: string, path: string, body?: unknown): Promise<Json> {
    const response = await server.request(method, path, { token, ...(body === undefined ? {} : { body }) });
    assert.ok(response.status < 300, `${method} ${path}: ${response.text}`);
    return response.body;
  }

  /** An automation with `definition` as version 1; deployed and enabled unless `draft`. */
  async function automationOf(server: TestServer, owner: SignedUp, name: string, definition: Json, options: { draft?: boolean; connectionId?: string } = {}) {
    const automation = await call(server, owner.token, 'POST', '/v1/automations', {
      name,
      definition,
      ...(options.connectionId ? { connection_id: options.connectionId } : {}),
    });
    if (options.draft) return automation;
    await call(server, owner.token, 'POST', `/v1/automations/${automation.id}/deploy`, { version: 1 });
    return call(server, owner.token, 'POST', `/v1/automations/${automation.id}/enable`);
  }

  const runsOf = async (server: TestServer, owner: SignedUp, automationId: string): Promise<Json[]> =>
    (await call(server, owner.token, 'GET', `/v1/runs?automation_id=${automationId}`)).data;

  async function expectLabelled(page: Page) {
    assert.deepEqual(await unlabelledControls(page), []);
  }

  it(
    'creates an automation, writes version 2, shows the diff, deploys with in_flight, rolls back, disables, enables, and deletes it with its active run',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Automations' }).click();
      await page.getByRole('heading', { name: 'Automations', level: 1 }).waitFor();
      await page.getByText('No automations yet').waitFor();
      await expectLabelled(page);

      // A definition the API refuses: its problems are listed at their JSON pointers.
      await page.getByRole('button', { name: 'New automation' }).click();
      await page.getByLabel('Name', { exact: true }).fill('Order helper');
      const broken = askAndThank('Thanks, we are on it.');
      broken.steps[0]!.next = 'nowhere';
      await page.getByLabel('Definition', { exact: true }).fill(JSON.stringify(broken, null, 2));
      await expectLabelled(page);
      await page.getByRole('button', { name: 'Create automation' }).click();
      await page.getByText('/definition/steps/0/next', { exact: true }).waitFor();
      assert.match((await page.getByRole('alert').first().textContent()) ?? '', /validation_failed/);

      await page.getByLabel('Definition', { exact: true }).fill(JSON.stringify(askAndThank('Thanks, we are on it.'), null, 2));
      await page.getByLabel('Version message').fill('First version');
      await page.getByRole('button', { name: 'Create automation' }).click();
      await page.getByRole('heading', { name: 'Order helper', level: 1 }).waitFor();
      const automationId = page.url().split('/').pop()!;
      await page.getByRole('cell', { name: /^Version 1/ }).waitFor();
      await expectLabelled(page);

      // Version 1 deployed (keep: nothing in flight yet) and enabled; a customer's message starts a run that waits.
      await page.getByRole('button', { name: 'Deploy a version' }).click();
      const deploy = page.getByRole('dialog', { name: 'Deploy a version' });
      await expectLabelled(page);
      await deploy.getByRole('button', { name: 'Deploy version 1' }).click();
      await page.getByText('Version 1 is deployed. Runs in flight: 0 kept, 0 canceled, 0 migrated.').waitFor();
      await page.getByRole('button', { name: 'Enable' }).click();
      await page.getByRole('button', { name: 'Disable' }).waitFor();
      await inbound(server, connection, { text: 'Where is my order?' });
      const [waiting] = await runsOf(server, owner, automationId);
      assert.equal(waiting?.status, 'waiting');
      // The run's start reached the page through the live stream.
      await page.getByRole('link', { name: waiting.id }).waitFor();

      // Version 2, written from version 1 in the editor.
      await page.getByRole('button', { name: 'New version', exact: true }).click();
      const editor = page.getByLabel('Definition', { exact: true });
      await editor.waitFor();
      const draft = (await editor.inputValue()).replace('Thanks, we are on it.', 'Thank you! We are on it.');
      await editor.fill(draft);
      await page.getByLabel('Version message').fill('Warmer thanks');
      await page.getByRole('button', { name: 'Save version 2' }).click();
      await page.getByRole('cell', { name: /^Version 2/ }).waitFor();

      // The diff between any two versions: line by line, each change marked + or − in words as well as colour.
      const compare = page.getByRole('region', { name: 'Compare versions' });
      await compare.getByLabel('From', { exact: true }).selectOption('1');
      await compare.getByLabel('To', { exact: true }).selectOption('2');
      const diff = compare.getByRole('figure', { name: 'Changes from version 1 to version 2' });
      await diff.getByText('1 line added, 1 removed.').waitFor();
      assert.match((await diff.locator('del').textContent()) ?? '', /^−removed: .*Thanks, we are on it\./);
      assert.match((await diff.locator('ins').textContent()) ?? '', /^\+added: .*Thank you! We are on it\./);
      await expectLabelled(page);

      // Deploying version 2 with migrate moves the waiting run onto it: the counts say so.
      await page.getByRole('button', { name: 'Deploy a version' }).click();
      await deploy.getByLabel('Version', { exact: true }).selectOption('2');
      await deploy.getByRole('radio', { name: /^Migrate/ }).check();
      await deploy.getByRole('button', { name: 'Deploy version 2' }).click();
      await page.getByText('Version 2 is deployed. Runs in flight: 0 kept, 0 canceled, 1 migrated.').waitFor();
      assert.equal((await call(server, owner.token, 'GET', `/v1/runs/${waiting.id}`)).version, 2);

      // Rolling back deploys version 1 again; the run stays on version 2 (keep).
      await page.getByRole('button', { name: 'Roll back to version 1' }).click();
      await page.getByRole('dialog', { name: 'Roll back to version 1' }).getByRole('button', { name: 'Roll back' }).click();
      await page.getByText('Version 1 is deployed. Runs in flight: 1 kept, 0 canceled, 0 migrated.').waitFor();
      await page.getByRole('button', { name: 'Roll back to version 2' }).waitFor();

      // Disable (keeping the run), then enable again.
      await page.getByRole('button', { name: 'Disable' }).click();
      const disable = page.getByRole('dialog', { name: 'Disable Order helper' });
      assert.ok(await disable.getByRole('radio', { name: /^Keep/ }).isChecked());
      assert.equal(await disable.getByRole('radio', { name: /^Migrate/ }).count(), 0);
      await disable.getByRole('button', { name: 'Disable' }).click();
      await page.getByRole('button', { name: 'Enable' }).click();
      await page.getByRole('button', { name: 'Disable' }).waitFor();
      assert.equal((await call(server, owner.token, 'GET', `/v1/automations/${automationId}`)).status, 'enabled');
      assert.equal((await call(server, owner.token, 'GET', `/v1/runs/${waiting.id}`)).status, 'waiting');

      // Deleting: the run is active, so the delete is offered only with cancel_runs, and says so.
      await page.getByRole('button', { name: 'Delete automation' }).click();
      const remove = page.getByRole('dialog', { name: 'Delete Order helper?' });
      await remove.getByText('It has active runs').waitFor();
      const confirm = remove.getByRole('button', { name: 'Delete and cancel runs' });
      assert.ok(await confirm.isDisabled());
      await expectLabelled(page);
      await remove.getByRole('checkbox', { name: /Cancel its active runs too/ }).check();
      await confirm.click();
      await page.getByRole('heading', { name: 'Automations', level: 1 }).waitFor();
      await page.getByText('No automations yet').waitFor();
      const gone = await server.request('GET', `/v1/automations/${automationId}`, { token: owner.token });
      assert.equal(gone.status, 404);
      const canceled = await call(server, owner.token, 'GET', `/v1/runs/${waiting.id}`);
      assert.deepEqual([canceled.status, canceled.outcome], ['canceled', 'canceled_by_delete']);
    }),
  );

  it(
    'explains a version refused as stale and saves it on top of the newer one',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const automation = await automationOf(server, owner, 'Stale edits', askAndThank('First thanks.'), { draft: true });
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner, `/dashboard/automations/${automation.id}`);
      await page.getByRole('button', { name: 'New version', exact: true }).click();
      const editor = page.getByLabel('Definition', { exact: true });
      await editor.fill((await editor.inputValue()).replace('First thanks.', 'My thanks.'));

      // Someone else writes version 2 meanwhile.
      await call(server, owner.token, 'POST', `/v1/automations/${automation.id}/versions`, {
        definition: askAndThank('Their thanks.'),
        based_on_version: 1,
      });
      await page.getByRole('button', { name: 'Save version 2' }).click();
      const stale = page.getByRole('alert').filter({ hasText: 'Someone wrote version 2 after you opened this editor' });
      await stale.waitFor();
      // What saving would change from their version: theirs removed, ours added.
      const diff = stale.getByRole('figure', { name: 'Your draft compared with version 2' });
      assert.match((await diff.locator('del').textContent()) ?? '', /Their thanks\./);
      assert.match((await diff.locator('ins').textContent()) ?? '', /My thanks\./);
      await expectLabelled(page);
      await stale.getByRole('button', { name: 'Save on top of version 2…' }).click();
      await page.getByRole('button', { name: 'Save version 3' }).click();
      await page.getByRole('cell', { name: /^Version 3/ }).waitFor();
      const version = await call(server, owner.token, 'GET', `/v1/automations/${automation.id}/versions/3`);
      assert.equal(version.definition.steps[2].text, 'My thanks.');
    }),
  );

  it(
    'shows a run’s timeline and cancels it; a dry run shows its simulated log',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      const automation = await automationOf(server, owner, 'Order status', orderStatus, { connectionId: connection.id });
      // The customer wrote first: their 24-hour window is open for the run's free-form message.
      const customer = newCustomer();
      await inbound(server, connection, { from: customer, text: 'Hello' });
      const run = await server.request('POST', '/v1/runs', {
        token: owner.token,
        headers: { 'idempotency-key': 'order-A-1042' },
        body: { automation_id: automation.id, to: `+${customer}`, input: { order_id: 'A-1042' } },
      });
      assert.equal(run.status, 201, run.text);
      await settle(server);

      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner, `/dashboard/runs/${run.body.id}`);
      await page.getByRole('heading', { name: `Run ${run.body.id}` }).waitFor();
      const timeline = page.getByRole('list', { name: 'Event log' });
      await timeline.getByText('Sends a text message').waitFor();
      await timeline.getByText('wait.reply', { exact: true }).waitFor();
      await expectLabelled(page);

      await page.getByRole('button', { name: 'Cancel run' }).click();
      const dialog = page.getByRole('dialog', { name: 'Cancel this run?' });
      await dialog.getByText('The run ends canceled').waitFor();
      await dialog.getByRole('button', { name: 'Cancel run' }).click();
      await timeline.getByText('run.canceled', { exact: true }).waitFor();
      await page.getByText('canceled', { exact: true }).first().waitFor();
      assert.equal(await page.getByRole('button', { name: 'Cancel run' }).count(), 0);

      // A dry run from the automation's page: refused input first, then the simulated path.
      await page.getByRole('link', { name: 'its automation' }).click();
      await page.getByRole('heading', { name: 'Order status', level: 1 }).waitFor();
      await page.getByRole('button', { name: 'Dry-run version 1' }).click();
      await page.getByText("must have required property 'order_id'").first().waitFor();
      await page.getByLabel('Input', { exact: true }).fill('{"order_id": "A-1042"}');
      await page.getByLabel('Simulate', { exact: true }).fill('{"replies": [{"text": "Yes", "after_seconds": 300}]}');
      await page.getByRole('button', { name: 'Dry-run version 1' }).click();
      const result = page.getByRole('region', { name: 'Dry run result' });
      await result.getByText('Outcome: confirmed', { exact: true }).waitFor();
      await result.getByText('Sends “Great, see you tomorrow with order A-1042!” (simulated)').waitFor();
      await result.getByText('wait.replied', { exact: true }).waitFor();
      await expectLabelled(page);
      // Nothing was sent: the only outbound message is the live run's first.
      const messages = await call(server, owner.token, 'GET', '/v1/messages?limit=100');
      assert.equal(messages.data.filter((message: Json) => message.direction === 'outbound').length, 1);
    }),
  );

  it(
    'decides approvals from the queue: the frozen action shown, one approved (the run moves on), one rejected with a reason',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      const automation = await automationOf(server, owner, 'Offers', offerNeedsApproval, { connectionId: connection.id });
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Approvals' }).click();
      await page.getByText('Nothing waits for a decision').waitFor();
      await expectLabelled(page);

      await inbound(server, connection, { text: 'Any offers?', name: 'Ana' });
      await inbound(server, connection, { text: 'Discounts?', name: 'Ben' });
      // Filed by the runs, they reach the open page through the live stream.
      const ana = page.getByRole('article', { name: 'Send the offer to Ana?' });
      const ben = page.getByRole('article', { name: 'Send the offer to Ben?' });
      await ana.getByText('What approving does: Sends the message “Here is your 10% offer, Ana.” to the run’s customer.').waitFor();
      await ben.waitFor();
      await expectLabelled(page);

      await ana.getByRole('button', { name: 'Approve' }).click();
      await ben.getByLabel(/Comment or reason/).fill('Not for this customer');
      await ben.getByRole('button', { name: 'Reject' }).click();
      await page.getByText('Nothing waits for a decision').waitFor();
      const decided = page.getByRole('region', { name: 'Decided' });
      await decided.getByRole('article', { name: 'Send the offer to Ana?' }).getByText('approved', { exact: true }).waitFor();
      await decided.getByText('“Not for this customer”', { exact: false }).waitFor();

      // The approved run carries out the frozen action, then ends; the rejected one takes its branch.
      await settle(server);
      const runs = await runsOf(server, owner, automation.id);
      assert.deepEqual(runs.map((run) => [run.status, run.outcome]).sort(), [
        ['completed', 'answered'],
        ['completed', 'answered'],
      ]);
      const approvals = (await call(server, owner.token, 'GET', `/v1/approvals?automation_id=${automation.id}`)).data;
      const approved = approvals.find((approval: Json) => approval.status === 'approved');
      assert.equal(approved.decided_by.member_id, owner.memberId);
      await page.goto(`/dashboard/runs/${approved.run_id}`);
      const timeline = page.getByRole('list', { name: 'Event log' });
      await timeline.getByText('approval.approved', { exact: true }).waitFor();
      await timeline.getByText('Sends a text message').waitFor();
      const sent = await call(server, owner.token, 'GET', `/v1/messages?limit=100`);
      assert.ok(sent.data.some((message: Json) => message.text?.body === 'Here is your 10% offer, Ana.'));
      assert.ok(!sent.data.some((message: Json) => message.text?.body === 'Here is your 10% offer, Ben.'));
    }),
  );

  it(
    'connects a connector account (secrets never shown back), shows a refused connect, and disconnects it',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const api = await startApi(t);
      const token = 'shop_secret_token_0123456789';
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Connector accounts' }).click();
      await page.getByText('No connector account yet').waitFor();
      await expectLabelled(page);

      await page.getByRole('button', { name: 'Connect an account' }).click();
      await page.getByLabel('Connector').selectOption('http_bearer');
      await page.getByLabel('Account name').fill('Shop');
      await page.getByLabel(/^Base URL/).fill(`${api.url}/api`);
      await page.getByLabel('Bearer token').fill(token);
      await page.getByLabel(/^Path of the test request/).fill('/health');
      await expectLabelled(page);

      // The shop refuses the test request: nothing is stored, and the page says why.
      api.json(401, { error: 'bad token' });
      await page.getByRole('button', { name: 'Connect', exact: true }).click();
      await page.getByRole('alert').filter({ hasText: 'provider_rejected' }).waitFor();

      api.json(200, { ok: true });
      await page.getByRole('button', { name: 'Connect', exact: true }).click();
      const row = page.getByRole('row').filter({ hasText: 'Shop' });
      await row.getByText('active').waitFor();
      await row.getByText('…6789').waitFor();
      assert.equal(api.seen.at(-1)?.url, '/api/health');
      assert.equal(api.seen.at(-1)?.headers.authorization, `Bearer ${token}`);
      assert.ok(!(await page.content()).includes(token), 'the secret is never shown back');

      await row.getByRole('button', { name: 'Disconnect Shop' }).click();
      const dialog = page.getByRole('dialog', { name: 'Disconnect Shop?' });
      await dialog.getByText('Its stored secrets are wiped').waitFor();
      await dialog.getByRole('button', { name: 'Disconnect' }).click();
      await row.getByText('revoked').waitFor();
      const accounts = (await call(server, owner.token, 'GET', '/v1/connector-accounts')).data;
      assert.deepEqual(
        accounts.map((account: Json) => account.status),
        ['revoked'],
      );
    }),
  );

  it(
    'offers an agent none of the automation pages',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const agent = await addMember(server, owner.organizationId, 'agent');
      const { page } = await openDashboard(t, browser, server);
      await signIn(page, agent);
      const nav = page.getByRole('navigation', { name: 'Main' });
      await nav.getByRole('link', { name: 'Inbox' }).waitFor();
      for (const name of ['Automations', 'Approvals', 'Connector accounts']) assert.equal(await nav.getByRole('link', { name }).count(), 0, name);
    }),
  );
});
