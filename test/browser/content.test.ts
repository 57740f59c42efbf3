/**
 * The templates, notifications and schedules pages in a real browser: a template created with its
 * preview, reviewed by the sandbox, synced and deleted; notifications sent from the form and a
 * batch followed on its progress page as its sends run; a schedule created with its description
 * and next occurrences shown before saving, fired by the clock, and deleted; and a viewer who reads
 * all of it with no control to change anything. Each test has its own server, since some move its clock.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import * as dashboard from '../../web/src/pages/schedules/recurrence.ts';
import { suiteScope, type TestServer } from '../harness.ts';
import { addMember, createConnection, defineTemplate, settle, signUp } from '../factories.ts';
import { browserTest, launchBrowser, openDashboard, signIn, startDashboardServer, unlabelledControls } from './browser.ts';

const CUSTOMERS = ['+447700900101', '+447700900102', '+447700900103'];

async function ownerWithTemplate(server: TestServer) {
  const owner = await signUp(server);
  const connection = await createConnection(server, owner);
  const template = await defineTemplate(server, owner.token, connection, {
    name: 'spring_sale',
    category: 'utility',
    text: 'Hi {{1}}, our sale starts today.',
    examples: ['Ana'],
  });
  return { owner, connection, template };
}

async function sandboxBehaviour(server: TestServer, behaviour: Record<string, unknown>) {
  const response = await server.request('POST', '/sandbox/control/behaviour', { body: behaviour });
  assert.equal(response.status, 200, response.text);
}

/**
 * How often a notification's page and a batch's page read it again while it is under way
 * (web/src/pages/notifications): the tests move the page's clock by as much once the server has
 * settled, rather than wait for the read. Were the pages to poll less often, the reads would come
 * on their own time and the tests only take longer.
 */
const NOTIFICATION_POLL_MS = 3_000;
const BATCH_POLL_MS = 2_000;

/** A notification page's status (its first fact). */
const status = (page: Page) => page.getByRole('definition').first();

/** The list's row that names `text`. */
const row = (page: Page, text: string | RegExp) => page.getByRole('row').filter({ hasText: text });

async function expectLabelled(page: Page, where: string) {
  assert.deepEqual(await unlabelledControls(page), [], `every control of ${where} is labelled and focusable`);
}

describe('dashboard templates, notifications and schedules', () => {
  const scope = suiteScope();
  const browser = launchBrowser(scope);

  it(
    'creates a template with its preview, sees it pending, approved by the review, synced, and deleted',
    browserTest(async (t) => {
      const server = await startDashboardServer(t);
      const owner = await signUp(server);
      const connection = await createConnection(server, owner, { name: 'Shop line' });
      const { page } = await openDashboard(t, await browser, server);
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Templates' }).click();
      await page.getByText('No template on this number yet').waitFor();
      await expectLabelled(page, 'the templates page');

      await page.getByRole('button', { name: 'New template' }).click();
      const form = page.getByRole('form', { name: 'New template' });
      await form.getByLabel('Name', { exact: true }).fill('order_update');
      await form.getByLabel('Header (optional)').fill('Order {{1}}');
      await form.getByLabel("Example for the header's {{1}}").fill('A-1');
      await form.getByLabel('Body').fill('Hi {{1}}, your order {{2}} ships on Monday.');
      await form.getByLabel('Example for {{1}}').fill('Ana');
      await form.getByLabel('Example for {{2}}').fill('EUR 12.34');
      await form.getByLabel('Footer (optional)').fill('Reply STOP to opt out');
      await form.getByRole('button', { name: 'Add quick reply button' }).click();
      await form.getByLabel('Button 1 text').fill('Stop');
      // The preview reads the template as the customer will, filled with its examples, before anything is sent.
      const preview = page.getByTestId('template-preview');
      await preview.getByText('Hi Ana, your order EUR 12.34 ships on Monday.').waitFor();
      await preview.getByText('Order A-1').waitFor();
      await preview.getByText('Reply STOP to opt out').waitFor();
      await preview.getByText('Stop', { exact: true }).waitFor();
      await expectLabelled(page, 'the template form');
      await form.getByRole('button', { name: 'Submit for review' }).click();
      await page.getByText('order_update (en_US) was submitted for review').waitFor();
      await row(page, 'order_update').getByText('pending').waitFor();

      const listed = await server.request('GET', `/v1/templates?connection_id=${connection.id}`, { token: owner.token });
      assert.equal(listed.body.data.length, 1);
      const stored = listed.body.data[0];
      assert.deepEqual(
        stored.components.map((component: { type: string }) => component.type),
        ['header', 'body', 'footer', 'buttons'],
      );
      assert.deepEqual(stored.components[1].examples, ['Ana', 'EUR 12.34']);

      // The provider's review arrives by webhook: the row turns approved without a reload (the live stream).
      const reviewed = await server.request('POST', '/sandbox/control/template-status', {
        body: { template_id: stored.provider_template_id, status: 'APPROVED' },
      });
      assert.equal(reviewed.status, 200, reviewed.text);
      await settle(server);
      await row(page, 'order_update').getByText('approved').waitFor();

      // A rejection shows the provider's reason beside its badge.
      const rejected = await defineTemplate(server, owner.token, connection, {
        name: 'too_pushy',
        category: 'marketing',
        text: 'Buy now, {{1}}!',
        examples: ['Ana'],
        approve: false,
      });
      await server.request('POST', '/sandbox/control/template-status', {
        body: { template_id: rejected.provider_template_id, status: 'REJECTED', reason: 'PROMOTIONAL' },
      });
      await settle(server);
      await row(page, 'too_pushy').getByText('rejected').waitFor();
      await row(page, 'too_pushy').getByText('PROMOTIONAL').waitFor();

      await page.getByRole('button', { name: 'Sync templates' }).click();
      // The sandbox's account also holds a template made at the provider directly: sync brings it in.
      await page.getByText(/Synced at .*: 3 at the provider, 1 added, 0 changed status, 0 marked deleted\./).waitFor();
      await row(page, 'hello_world').getByText('approved').waitFor();
      await row(page, 'order_update').getByText('approved').waitFor();

      await row(page, 'order_update').getByRole('button', { name: 'Delete' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete order_update (en_US)?' });
      await dialog.getByText('it can no longer be sent, so notifications and schedules that use it fail').waitFor();
      await dialog.getByText('Messages already sent keep naming it').waitFor();
      await dialog.getByRole('button', { name: 'Delete template' }).click();
      await row(page, 'order_update').getByText('deleted').waitFor();
      assert.equal(await row(page, 'order_update').getByRole('button', { name: 'Delete' }).count(), 0);
      const after = await server.request('GET', `/v1/templates/${stored.id}`, { token: owner.token });
      assert.equal(after.body.status, 'deleted');
    }),
  );

  it(
    'sends a notification from the form, follows it to delivered, and replays one that failed',
    browserTest(async (t) => {
      const server = await startDashboardServer(t);
      const { owner } = await ownerWithTemplate(server);
      const { page, context } = await openDashboard(t, await browser, server);
      // The page's clock, so that its next read comes when the test says rather than 3 s later.
      await context.clock.install();
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Notifications' }).click();
      await page.getByText('No notification yet').waitFor();
      await expectLabelled(page, 'the notifications page');

      await page.getByRole('button', { name: 'Send a notification' }).click();
      const form = page.getByRole('form', { name: 'Send a notification' });
      await form.getByLabel('Template').selectOption({ label: 'spring_sale (en_US, utility)' });
      await form.getByLabel('Body {{1}}').fill('Ana');
      await page.getByTestId('template-preview').getByText('Hi Ana, our sale starts today.').waitFor();
      await form.getByLabel('Recipients').fill(CUSTOMERS[0]!);
      await expectLabelled(page, 'the send form');
      await form.getByRole('button', { name: 'Send notification' }).click();
      await page.getByRole('heading', { name: `Notification to ${CUSTOMERS[0]}` }).waitFor();
      await page.getByText('Not yet: the message is created when the notification is first sent.').waitFor();

      // Its send runs; the page reads it again (every 3 s) until it settles.
      await settle(server);
      await page.clock.fastForward(NOTIFICATION_POLL_MS);
      await status(page).getByText('delivered', { exact: true }).waitFor();
      await page.getByRole('link', { name: 'Open it in the inbox' }).waitFor();
      await expectLabelled(page, 'the notification page');

      // One the provider refuses fails with its reason, and is sent again as a new notification.
      await sandboxBehaviour(server, { fail_next: { code: 131009, details: 'Parameter value is not valid' } });
      await page.getByRole('link', { name: 'All notifications' }).click();
      await page.getByRole('button', { name: 'Send a notification' }).click();
      await form.getByLabel('Template').selectOption({ label: 'spring_sale (en_US, utility)' });
      await form.getByLabel('Body {{1}}').fill('Bo');
      await form.getByLabel('Recipients').fill(CUSTOMERS[1]!);
      await form.getByRole('button', { name: 'Send notification' }).click();
      await page.getByRole('heading', { name: `Notification to ${CUSTOMERS[1]}` }).waitFor();
      await settle(server);
      await page.clock.fastForward(NOTIFICATION_POLL_MS);
      await status(page).getByText('failed', { exact: true }).waitFor();
      await page.getByRole('button', { name: 'Replay' }).click();
      const dialog = page.getByRole('dialog', { name: `Send the notification to ${CUSTOMERS[1]} again?` });
      await dialog.getByText('A new notification sends spring_sale').waitFor();
      await dialog.getByRole('button', { name: 'Send again' }).click();
      await page.getByRole('term').getByText('Replay of').waitFor();
      await settle(server);
      await page.clock.fastForward(NOTIFICATION_POLL_MS);
      await status(page).getByText('delivered', { exact: true }).waitFor();
      const failed = await server.request('GET', '/v1/notifications?status=failed', { token: owner.token });
      assert.equal(failed.body.data.length, 1);
      assert.ok(failed.body.data[0].replayed_by);
    }),
  );

  it(
    'follows a batch on its progress page as its sends run, one of them canceled first',
    browserTest(async (t) => {
      const server = await startDashboardServer(t);
      const { owner, connection, template } = await ownerWithTemplate(server);
      const sendAt = new Date(server.clock.now().getTime() + 10 * 60_000);
      const created = await server.request('POST', '/v1/notifications/batch', {
        token: owner.token,
        headers: { 'idempotency-key': randomUUID() },
        body: {
          connection_id: connection.id,
          template: { id: template.id },
          send_at: sendAt.toISOString(),
          recipients: CUSTOMERS.map((to, i) => ({ to, parameters: { body: [`Customer ${i}`] } })),
        },
      });
      assert.equal(created.status, 201, created.text);
      const { page, context } = await openDashboard(t, await browser, server);
      await context.clock.install();
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Notifications' }).click();
      await row(page, CUSTOMERS[0]!).getByRole('link', { name: 'Batch' }).click();
      await page.getByRole('heading', { name: 'Batch: spring_sale to 3 recipients' }).waitFor();
      const count = (status: string) => page.getByTestId(`count-${status}`);
      await count('scheduled').getByText('3', { exact: true }).waitFor();
      const progress = page.getByRole('progressbar', { name: 'Batch progress' });
      assert.equal(await progress.getAttribute('aria-valuenow'), '0');
      await expectLabelled(page, 'the batch page');

      await row(page, CUSTOMERS[1]!).getByRole('button', { name: 'Cancel sending' }).click();
      const dialog = page.getByRole('dialog', { name: `Cancel the notification to ${CUSTOMERS[1]}?` });
      await dialog.getByText(`Nothing reaches ${CUSTOMERS[1]}`).waitFor();
      await dialog.getByRole('button', { name: 'Cancel notification' }).click();
      await count('canceled').getByText('1', { exact: true }).waitFor();
      await count('scheduled').getByText('2', { exact: true }).waitFor();
      await row(page, CUSTOMERS[1]!).getByText('canceled').waitFor();

      // Their time comes: the sends run, and the page, reading the batch again (every 2 s), shows the counts move.
      server.clock.set(new Date(sendAt.getTime() + 1_000));
      await settle(server);
      await page.clock.fastForward(BATCH_POLL_MS);
      await count('delivered').getByText('2', { exact: true }).waitFor();
      await page.getByText('Finished: all 3 settled.').waitFor();
      assert.equal(await progress.getAttribute('aria-valuenow'), '3');
      await row(page, CUSTOMERS[0]!).getByText('delivered').waitFor();
      assert.equal(await page.getByRole('button', { name: 'Cancel sending' }).count(), 0, 'nothing is left to cancel');
    }),
  );

  it(
    'creates a schedule with its description and next occurrences shown before saving, fires it by the clock, and deletes it',
    browserTest(async (t) => {
      const server = await startDashboardServer(t);
      const { owner } = await ownerWithTemplate(server);
      const { page } = await openDashboard(t, await browser, server);
      await signIn(page, owner);
      await page.getByRole('link', { name: 'Schedules' }).click();
      await page.getByText('No schedule yet').waitFor();
      await expectLabelled(page, 'the schedules page');

      await page.getByRole('button', { name: 'New schedule' }).click();
      const form = page.getByRole('form', { name: 'New schedule' });
      await form.getByLabel('Name (optional)').fill('Morning reminder');
      await form.getByLabel('Time zone').fill('Europe/Berlin');
      await form.getByLabel('Cron expression').fill('* * * * *');
      // Refused before it is saved: the preview is the service's own answer, on the field it names.
      await page.getByText(/^The service will refuse this: .*60 s apart/).waitFor();
      await form
        .getByText(/60 s apart/)
        .first()
        .waitFor();
      await form.getByLabel('Cron expression').fill('30 9 * * *');
      await page.getByTestId('recurrence-description').getByText('At 09:30 (Europe/Berlin)').waitFor();
      const shown = page.getByRole('list', { name: 'Next occurrences' }).getByRole('listitem');
      await shown.nth(4).waitFor();
      const previewed = await shown.evaluateAll((items) => items.map((item) => item.getAttribute('data-at')));
      assert.equal(previewed.length, 5);
      assert.match((await shown.first().textContent()) ?? '', /9:30.*\(Europe\/Berlin\)/);
      await form.getByLabel('Template').selectOption({ label: 'spring_sale (en_US, utility)' });
      await form.getByLabel('Body {{1}}').fill('Ana');
      await form.getByLabel('Recipients').fill(CUSTOMERS[0]!);
      await expectLabelled(page, 'the schedule form');
      await form.getByRole('button', { name: 'Create schedule' }).click();
      await page.getByRole('status').getByText('Created:').waitFor();
      const listed = row(page, 'Morning reminder');
      await listed.getByText('At 09:30 (Europe/Berlin)').waitFor();
      await listed.getByText('active').waitFor();

      // The service stored what the form showed: its first occurrence, and the next ones, are the preview's.
      const schedules = await server.request('GET', '/v1/schedules', { token: owner.token });
      const schedule = schedules.body.data[0];
      assert.equal(schedule.description, 'At 09:30 (Europe/Berlin)');
      assert.equal(schedule.next_occurrence_at, previewed[0]);
      const upcoming = await server.request('GET', `/v1/schedules/${schedule.id}/occurrences?include=upcoming&limit=5&order=asc`, { token: owner.token });
      assert.deepEqual(
        upcoming.body.data.map((occurrence: { scheduled_for: string }) => occurrence.scheduled_for),
        previewed,
      );

      await listed.getByRole('link', { name: 'Morning reminder' }).click();
      await page.getByRole('heading', { name: 'Morning reminder' }).waitFor();
      await page.getByRole('list', { name: 'Upcoming occurrences' }).getByRole('listitem').nth(4).waitFor();
      await page.getByText('None yet: each time the schedule comes due').waitFor();
      await expectLabelled(page, 'the schedule page');

      // Its time comes: the occurrence fires and sends its notification.
      server.clock.set(new Date(Date.parse(schedule.next_occurrence_at) + 1_000));
      await settle(server);
      await page.getByRole('button', { name: 'Refresh' }).click();
      const fired = page.getByRole('row').filter({ hasText: 'fired' });
      await fired.getByRole('link', { name: 'Sent a notification' }).waitFor();

      await page.getByRole('button', { name: 'Pause schedule' }).click();
      await page.getByText('None while paused').waitFor();
      await page.getByRole('button', { name: 'Resume schedule' }).click();
      await page.getByRole('button', { name: 'Pause schedule' }).waitFor();

      await fired.getByRole('link', { name: 'Sent a notification' }).click();
      await page.getByRole('heading', { name: `Notification to ${CUSTOMERS[0]}` }).waitFor();
      await page.getByRole('link', { name: 'Its schedule' }).click();

      await page.getByRole('button', { name: 'Delete schedule' }).click();
      const dialog = page.getByRole('dialog', { name: 'Delete Morning reminder?' });
      await dialog.getByText('Nothing more fires').waitFor();
      await dialog.getByText('The notifications it already sent stay').waitFor();
      await dialog.getByRole('button', { name: 'Delete schedule' }).click();
      await page.getByText('No schedule yet').waitFor();
      // A day may have passed on the server's clock: the owner's token of this morning has expired.
      const again = await server.request('POST', '/auth/login', { body: { email: owner.email, password: owner.password } });
      const gone = await server.request('GET', `/v1/schedules/${schedule.id}`, { token: again.body.token });
      assert.equal(gone.status, 404);
    }),
  );

  it(
    'shows a viewer templates, notifications, a batch and schedules with no control to change them',
    browserTest(async (t) => {
      const server = await startDashboardServer(t);
      const { owner, connection, template } = await ownerWithTemplate(server);
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      const batch = await server.request('POST', '/v1/notifications/batch', {
        token: owner.token,
        headers: { 'idempotency-key': randomUUID() },
        body: {
          connection_id: connection.id,
          template: { id: template.id },
          send_at: new Date(server.clock.now().getTime() + 3_600_000).toISOString(),
          recipients: CUSTOMERS.slice(0, 2).map((to) => ({ to, parameters: { body: ['Ana'] } })),
        },
      });
      assert.equal(batch.status, 201, batch.text);
      const schedule = await server.request('POST', '/v1/schedules', {
        token: owner.token,
        body: {
          name: 'Weekly digest',
          recurrence: { type: 'cron', expression: '0 8 * * 1' },
          target: { type: 'notification', connection_id: connection.id, template: { id: template.id }, to: [CUSTOMERS[0]], parameters: { body: ['Ana'] } },
        },
      });
      assert.equal(schedule.status, 201, schedule.text);

      const { page } = await openDashboard(t, await browser, server);
      await signIn(page, viewer);
      const noneOf = async (where: string, names: string[]) => {
        for (const name of names) assert.equal(await page.getByRole('button', { name }).count(), 0, `${where}: no “${name}” for a viewer`);
        await expectLabelled(page, where);
      };

      await page.getByRole('link', { name: 'Templates' }).click();
      await row(page, 'spring_sale').getByText('approved').waitFor();
      await noneOf('the templates page', ['New template', 'Sync templates', 'Delete']);

      await page.getByRole('link', { name: 'Notifications' }).click();
      await row(page, CUSTOMERS[0]!).getByText('scheduled').waitFor();
      await noneOf('the notifications page', ['Send a notification', 'Cancel sending']);
      await row(page, CUSTOMERS[0]!).getByRole('link', { name: CUSTOMERS[0]! }).click();
      await page.getByRole('heading', { name: `Notification to ${CUSTOMERS[0]}` }).waitFor();
      await noneOf('the notification page', ['Cancel sending', 'Replay']);
      await page.getByRole('link', { name: 'Its batch' }).click();
      await page.getByTestId('count-scheduled').getByText('2', { exact: true }).waitFor();
      await noneOf('the batch page', ['Cancel sending']);

      await page.getByRole('link', { name: 'Schedules' }).click();
      await row(page, 'Weekly digest').getByText('At 08:00, only on Monday (UTC)').waitFor();
      await noneOf('the schedules page', ['New schedule']);
      await row(page, 'Weekly digest').getByRole('link', { name: 'Weekly digest' }).click();
      await page.getByRole('heading', { name: 'Weekly digest' }).waitFor();
      await noneOf('the schedule page', ['Pause schedule', 'Edit schedule', 'Delete schedule']);
    }),
  );
});

describe("the schedules forms' wall-clock times", () => {
  it("reads a local time in the schedule's zone, and shows an instant as one", () => {
    assert.equal(dashboard.instantIn('2026-07-01T09:00', 'Europe/Berlin')?.toISOString(), '2026-07-01T07:00:00.000Z');
    assert.equal(dashboard.localInput(new Date('2026-07-01T07:00:00.000Z'), 'America/Sao_Paulo'), '2026-07-01T04:00');
    assert.equal(dashboard.knownTimeZone('Europe/Berlin'), true);
    assert.equal(dashboard.knownTimeZone('Mars/Olympus_Mons'), false);
  });
});
