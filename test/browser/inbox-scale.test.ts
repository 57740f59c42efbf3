/**
 * The inbox at scale (issue 19's quality bar): how soon the first conversation shows with 10,000
 * stored (printed, not asserted: a figure to watch, on a machine shared with other work), and a
 * list of 1,000 scrolled to its end with only the rows in view in the page.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContactsTable, ConversationsTable, MessagesTable } from '../../src/db/schema.ts';
import { newId } from '../../src/lib/ids.ts';
import type { TestServer } from '../harness.ts';
import { createConnection, signUp } from '../factories.ts';
import { browserTest, dashboardSuite, openDashboard, signIn } from './browser.ts';

const BATCH = 500;

/** In the page (a string: the tests are type-checked without the DOM's types): when the first row appears, from the navigation's start. */
const FIRST_ROW_WATCH = `
  const observer = new MutationObserver(() => {
    if (!document.querySelector('[data-testid="conversation-row"]')) return;
    window.firstRowAt = performance.now();
    observer.disconnect();
  });
  observer.observe(document, { childList: true, subtree: true });
`;
const READ_FIGURES = `({
  firstPaint: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null,
  firstRow: window.firstRowAt ?? null,
})`;

/**
 * `count` conversations straight into the store, each with a contact and one message, a minute
 * apart and oldest first (`Customer 0` is the oldest): what 10,000 webhooks would leave, in seconds.
 */
async function seedConversations(server: TestServer, organizationId: string, connectionId: string, count: number): Promise<void> {
  const db = server.app.store.db;
  const start = server.clock.now().getTime() - count * 60_000;
  for (let first = 0; first < count; first += BATCH) {
    const contacts: ContactsTable[] = [];
    const conversations: ConversationsTable[] = [];
    const messages: MessagesTable[] = [];
    for (let i = first; i < Math.min(count, first + BATCH); i++) {
      const at = new Date(start + i * 60_000).toISOString();
      const contactId = newId('contact', start + i * 60_000);
      const conversationId = newId('conversation', start + i * 60_000);
      const inbound = i % 2 === 0;
      contacts.push({
        id: contactId,
        organization_id: organizationId,
        phone_number: `+44700${String(i).padStart(7, '0')}`,
        name: `Customer ${i}`,
        profile_name: null,
        metadata: '{}',
        last_inbound_at: at,
        created_at: at,
        updated_at: at,
        email: null,
        marketing_consent: 'unknown',
        marketing_consent_since: null,
        marketing_consent_source: null,
        deleted_at: null,
      });
      conversations.push({
        id: conversationId,
        organization_id: organizationId,
        connection_id: connectionId,
        contact_id: contactId,
        state: 'open',
        last_message_at: at,
        last_inbound_at: at,
        metadata: '{}',
        created_at: at,
        updated_at: at,
        window_warning_for: null,
        assignee_id: null,
        control: 'api',
        tags: '[]',
      });
      messages.push({
        id: newId('message', start + i * 60_000),
        organization_id: organizationId,
        connection_id: connectionId,
        conversation_id: conversationId,
        contact_id: contactId,
        direction: inbound ? 'inbound' : 'outbound',
        type: 'text',
        content: JSON.stringify({ body: { body: `Message number ${i}` }, referral: null }),
        context: null,
        status: inbound ? 'received' : 'delivered',
        provider_message_id: `wamid.seed${i}`,
        imported: 0,
        error: null,
        metadata: '{}',
        sent_at: at,
        send_request: null,
        echo: 0,
        created_at: at,
        updated_at: at,
      });
    }
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('contacts').values(contacts).execute();
      await trx.insertInto('conversations').values(conversations).execute();
      await trx.insertInto('messages').values(messages).execute();
    });
  }
}

const scrollToEnd = (element: any) => element.scrollTo({ top: element.scrollHeight });
/** In the page: whether a row past `shown` is rendered (the DOM through `globalThis`: no DOM types here). */
function lastRowShownPast(shown: number): boolean {
  const rows: any[] = [...(globalThis as any).document.querySelectorAll('[data-testid="conversation-row"]')];
  return rows.some((row) => Number(row.getAttribute('aria-posinset')) > shown);
}

describe('inbox at scale', () => {
  const setup = dashboardSuite();

  it(
    'paints the first conversation of 10,000 (the figures are printed)',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      await seedConversations(server, owner.organizationId, connection.id, 10_000);

      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      // Records when the first row enters the page, measured from the navigation's start.
      await page.addInitScript(FIRST_ROW_WATCH);
      await page.goto('/dashboard/inbox');
      const newest = page.getByRole('option', { name: /Customer 9999/ });
      await newest.waitFor();
      const figures = await page.evaluate<{ firstPaint: number | null; firstRow: number | null }>(READ_FIGURES);
      assert.ok(figures.firstRow !== null);
      console.log(
        `DASHBOARD first_paint_ms=${figures.firstPaint === null ? 'none' : Math.round(figures.firstPaint)} first_row_ms=${Math.round(figures.firstRow)} conversations=10000`,
      );
      assert.equal(await page.getByRole('listbox', { name: 'Conversations' }).getByRole('option').first().getAttribute('aria-posinset'), '1');
    }),
  );

  it(
    'scrolls 1,000 conversations to the last, with only those in view in the page',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      await seedConversations(server, owner.organizationId, connection.id, 1_000);

      const { page } = await openDashboard(t, browser, server);
      await signIn(page, owner);
      const list = page.getByRole('listbox', { name: 'Conversations' });
      const options = list.getByRole('option');
      await options.first().waitFor();
      // Down to the end of what is loaded, again and again: each time the next page comes in below.
      for (;;) {
        const last = Number(await options.last().getAttribute('aria-posinset'));
        if (last === 1_000) break;
        await list.evaluate(scrollToEnd);
        await page.waitForFunction(lastRowShownPast, last);
      }
      await list.evaluate(scrollToEnd);
      const oldest = list.getByRole('option', { name: /Customer 0\b/ });
      await oldest.waitFor();
      assert.equal(await oldest.getAttribute('aria-setsize'), '1000');
      const inPage = await options.count();
      assert.ok(inPage < 60, `${inPage} rows in the page for 1,000 conversations`);
      assert.equal(await list.getByRole('option', { name: /Customer 999\b/ }).count(), 0, 'the newest rows left the page');
    }),
  );
});
