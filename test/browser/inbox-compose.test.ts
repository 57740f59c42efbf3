/**
 * Acting in the inbox, in a real browser: replying (text, a photo, a quote, a reaction), the
 * conversation lock between two agents, templates once the 24-hour window is closed, the details
 * panel (tags, notes, assignment, state, who answers), and a viewer who may only read.
 *
 * The conversation opens at /dashboard/inbox/<id>; the composer is the region "Reply", the panel the
 * complementary region "Conversation details", and a message's actions are named after the message
 * ("Reply to “Where is my order?”").
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { addMember, createConnection, defineTemplate, inbound, settle, signUp, type SignedUp } from '../factories.ts';
import type { TestServer } from '../harness.ts';
import { waitFor } from '../wait.ts';
import { browserTest, dashboardSuite, openDashboard, signIn, unlabelledControls } from './browser.ts';

/** A 1×1 PNG: enough for the upload's signature check. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

/** A text as a literal inside a regular expression. */
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('inbox: replying and working on a conversation', () => {
  const setup = dashboardSuite();

  /** An organization with a number, and a customer who wrote `text` to it. */
  async function customerWrote(server: TestServer, text: string) {
    const owner = await signUp(server);
    const connection = await createConnection(server, owner);
    const message = await inbound(server, connection, { text });
    return { owner, connection, message, conversationId: message.conversation_id };
  }

  async function openConversation(page: Page, member: { email: string; password: string }, conversationId: string) {
    await signIn(page, member, `/dashboard/inbox/${conversationId}`);
  }

  const composerOf = (page: Page) => page.getByRole('region', { name: 'Reply', exact: true });
  const panelOf = (page: Page) => page.getByRole('complementary', { name: 'Conversation details' });

  async function messagesOf(server: TestServer, owner: SignedUp, conversationId: string) {
    const listed = await server.request('GET', `/v1/messages?conversation_id=${conversationId}`, { token: owner.token });
    assert.equal(listed.status, 200, listed.text);
    return listed.body.data as { id: string; direction: string; type: string; text?: { body: string }; context: { reply_to: string | null } | null }[];
  }

  it(
    'replies to a customer’s message from the composer, quoting it, and reacts to it',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const { owner, message, conversationId } = await customerWrote(server, 'Where is my order?');
      const agent = await addMember(server, owner.organizationId, 'agent');
      const { page } = await openDashboard(t, browser, server);
      await openConversation(page, agent, conversationId);
      const composer = composerOf(page);

      await page.getByRole('button', { name: 'Reply to “Where is my order?”' }).click();
      await composer.getByText('Replying to “Where is my order?”').waitFor();
      // Choosing Reply puts the cursor in the reply box.
      await page.keyboard.type('It ships today.');
      await composer.getByText(/You are replying/).waitFor();
      await page.keyboard.press('Enter');

      await page.getByText('It ships today.').first().waitFor();
      await composer.getByText(/Replying to/).waitFor({ state: 'detached' });
      assert.equal(await composer.getByLabel('Message').inputValue(), '');
      // Sent: the lock is let go at once, not left to lapse.
      await composer.getByText(/You are replying/).waitFor({ state: 'detached' });
      assert.equal((await server.request('GET', `/v1/conversations/${conversationId}/lock`, { token: owner.token })).status, 404);
      const reply = (await messagesOf(server, owner, conversationId)).find((m) => m.direction === 'outbound');
      assert.equal(reply?.text?.body, 'It ships today.');
      assert.equal(reply?.context?.reply_to, message.id);

      // Shift+Enter is a new line, not a send.
      await composer.getByLabel('Message').fill('Line one');
      await composer.getByLabel('Message').press('Shift+Enter');
      await composer.getByLabel('Message').pressSequentially('Line two');
      assert.equal(await composer.getByLabel('Message').inputValue(), 'Line one\nLine two');

      await page.getByRole('button', { name: 'React to “Where is my order?”' }).click();
      await page.getByRole('button', { name: 'React with thumbs up' }).click();
      await page.getByRole('button', { name: 'React with thumbs up' }).waitFor({ state: 'detached' });
      const reaction = (await messagesOf(server, owner, conversationId)).find((m) => m.type === 'reaction') as unknown as {
        reaction: { message_id: string; emoji: string };
      };
      assert.deepEqual(reaction.reaction, { message_id: message.id, emoji: '👍' });
      assert.deepEqual(await unlabelledControls(page), []);
    }),
  );

  it(
    'sends a photo with a caption',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const { owner, conversationId } = await customerWrote(server, 'Can you send the receipt?');
      const { page } = await openDashboard(t, browser, server);
      await openConversation(page, owner, conversationId);
      const composer = composerOf(page);
      await composer.getByLabel('File to attach').setInputFiles({ name: 'receipt.png', mimeType: 'image/png', buffer: PNG });
      await composer.getByText('receipt.png (image)').waitFor();
      await composer.getByLabel('Caption').fill('Your receipt');
      await composer.getByRole('button', { name: 'Send', exact: true }).click();
      await composer.getByText('receipt.png (image)').waitFor({ state: 'detached' });
      const sent = (await messagesOf(server, owner, conversationId)).find((m) => m.direction === 'outbound') as unknown as {
        type: string;
        image: { media_id: string; caption: string };
      };
      assert.equal(sent.type, 'image');
      assert.equal(sent.image.caption, 'Your receipt');
      assert.match(sent.image.media_id, /^med_/);
    }),
  );

  it(
    'hands a conversation over between two agents: the holder types, the other asks, the holder hands over',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const { owner, conversationId } = await customerWrote(server, 'Hello?');
      const ana = await addMember(server, owner.organizationId, 'agent');
      const bo = await addMember(server, owner.organizationId, 'agent');
      const first = await openDashboard(t, browser, server);
      const second = await openDashboard(t, browser, server);

      await openConversation(first.page, ana, conversationId);
      const anaComposer = composerOf(first.page);
      await anaComposer.getByLabel('Message').fill('Let me check that for you');
      await anaComposer.getByText(/You are replying/).waitFor();
      const held = await server.request('GET', `/v1/conversations/${conversationId}/lock`, { token: owner.token });
      assert.equal(held.body.holder.member_id, ana.memberId);

      await openConversation(second.page, bo, conversationId);
      const boComposer = composerOf(second.page);
      // Every member reads the member list, so the holder is named (addMember gives no name: the email).
      await boComposer
        .getByText(new RegExp(`${escape(ana.email)} is replying to this conversation \\(lock held until .+\\)\\. Request a handover\\?`))
        .waitFor();
      assert.equal(await boComposer.getByLabel('Message').isDisabled(), true);
      await boComposer.getByRole('button', { name: 'Request handover' }).click();
      await boComposer.getByText(/You asked for a handover at/).waitFor();

      // The live stream tells Ana; she hands over from the composer.
      await anaComposer.getByText(new RegExp(`${escape(bo.email)} asks to take over this conversation`)).waitFor();
      await anaComposer.getByRole('button', { name: 'Hand over' }).click();
      await anaComposer.getByText(new RegExp(`${escape(bo.email)} is replying to this conversation`)).waitFor();
      assert.equal(await anaComposer.getByLabel('Message').isDisabled(), true);
      // Her draft stays, for when the conversation comes back to her.
      assert.equal(await anaComposer.getByLabel('Message').inputValue(), 'Let me check that for you');

      // Bo holds it now, and can write.
      await boComposer.getByLabel('Message').fill('I have it from here.');
      await boComposer.getByLabel('Message').press('Enter');
      // The draft clears once the send is answered. Until then the words are in the text box itself,
      // which React mirrors into the textarea's text, so a text search alone would find them there.
      await waitFor(async () => (await boComposer.getByLabel('Message').inputValue()) === '', {
        timeoutMs: 10_000,
        message: "Bo's draft to clear once the send is answered",
      });
      await second.page.getByText('I have it from here.').first().waitFor();
      await settle(server);
      const outbound = (await messagesOf(server, owner, conversationId)).filter((m) => m.direction === 'outbound');
      assert.deepEqual(
        outbound.map((m) => m.text?.body),
        ['I have it from here.'],
      );
    }),
  );

  it(
    'explains a send refused because a teammate took the conversation meanwhile',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const { owner, conversationId } = await customerWrote(server, 'Anyone there?');
      const ana = await addMember(server, owner.organizationId, 'agent');
      const bo = await addMember(server, owner.organizationId, 'agent');
      const { page } = await openDashboard(t, browser, server);
      await openConversation(page, bo, conversationId);
      const composer = composerOf(page);
      await composer.getByLabel('Message').fill('Yes, one moment');
      await composer.getByText(/You are replying/).waitFor();

      // Bo's lease lapses by the service's clock (a minute without renewal), and Ana takes the conversation.
      server.clock.advance(61_000);
      const taken = await server.request('POST', `/v1/conversations/${conversationId}/lock`, { token: ana.token, body: {} });
      assert.equal(taken.status, 201, taken.text);

      // Bo sends before his page learns of it, or just after (then the box closed first, and the key
      // press, to the still focused box or to nothing, sends nothing).
      await page.keyboard.press('Enter');
      await composer.getByText(new RegExp(`${escape(ana.email)} is replying to this conversation \\(lock held until .+\\)\\. Request a handover\\?`)).waitFor();
      await composer.getByRole('button', { name: 'Request handover' }).waitFor();
      assert.equal(await composer.getByLabel('Message').inputValue(), 'Yes, one moment');
      assert.equal((await messagesOf(server, owner, conversationId)).filter((m) => m.direction === 'outbound').length, 0);
    }),
  );

  it(
    'offers only a template once the 24-hour window is closed, with its parameters and a preview',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const owner = await signUp(server);
      const connection = await createConnection(server, owner);
      await defineTemplate(server, owner.token, connection, {
        name: 'order_ready',
        category: 'utility',
        text: 'Hi {{1}}, your order {{2}} is ready.',
        examples: ['Ana', 'A-1'],
      });
      // A conversation the business started: the customer never wrote, so there is no window.
      const started = await server.request('POST', '/v1/messages', {
        token: owner.token,
        headers: { 'idempotency-key': randomUUID() },
        body: {
          connection_id: connection.id,
          to: '+447700900555',
          type: 'template',
          template: { name: 'order_ready', language: 'en_US', body: ['Sam', 'A-0'] },
        },
      });
      assert.equal(started.status, 201, started.text);
      await settle(server);
      const conversationId = started.body.conversation_id as string;
      const agent = await addMember(server, owner.organizationId, 'agent');
      const { page } = await openDashboard(t, browser, server);
      await openConversation(page, agent, conversationId);
      const composer = composerOf(page);

      await composer.getByText(/The customer has not written to this number yet/).waitFor();
      assert.equal(await composer.getByLabel('Message').count(), 0);
      await composer.getByRole('button', { name: 'Choose a template' }).click();
      const dialog = page.getByRole('dialog', { name: 'Send a template' });
      await dialog.getByLabel('Template').selectOption({ label: 'order_ready (en_US, utility)' });
      await dialog.getByLabel('Body {{1}}').fill('Grace');
      const preview = dialog.getByRole('region', { name: 'Preview' });
      await preview.getByText('Hi Grace, your order {{2}} is ready.').waitFor();
      // A placeholder left empty is named before anything is sent.
      await dialog.getByRole('button', { name: 'Send template' }).click();
      await dialog.getByText('Fill this in: the template needs it.').waitFor();
      await dialog.getByLabel('Body {{2}}').fill('B-7');
      await preview.getByText('Hi Grace, your order B-7 is ready.').waitFor();
      assert.deepEqual(await unlabelledControls(page), []);
      await dialog.getByRole('button', { name: 'Send template' }).click();
      await dialog.waitFor({ state: 'detached' });

      const sent = (await messagesOf(server, owner, conversationId)).filter((m) => m.type === 'template');
      assert.equal(sent.length, 2);
      assert.match(JSON.stringify(sent[0]), /Grace/);
    }),
  );

  it(
    'adds and removes tags, refusing one the API would refuse',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const { owner, conversationId } = await customerWrote(server, 'Hi');
      const agent = await addMember(server, owner.organizationId, 'agent');
      const { page } = await openDashboard(t, browser, server);
      await openConversation(page, agent, conversationId);
      const panel = panelOf(page);

      await panel.getByLabel('New tag').fill('Billing Late');
      await panel.getByRole('button', { name: 'Add tag' }).click();
      await panel.getByText(/A tag is 1 to 50 lowercase letters/).waitFor();
      await panel.getByLabel('New tag').fill('billing:late');
      await panel.getByRole('button', { name: 'Add tag' }).click();
      await panel.getByRole('list', { name: 'Tags' }).getByText('billing:late').waitFor();
      assert.deepEqual((await server.request('GET', `/v1/conversations/${conversationId}`, { token: owner.token })).body.tags, ['billing:late']);

      await panel.getByRole('button', { name: 'Remove tag billing:late' }).click();
      await panel.getByText('No tags.').waitFor();
      assert.deepEqual((await server.request('GET', `/v1/conversations/${conversationId}`, { token: owner.token })).body.tags, []);
    }),
  );

  it(
    'adds an internal note, assigns the conversation to me, and sets its state and who answers',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const { owner, conversationId } = await customerWrote(server, 'Hi again');
      const agent = await addMember(server, owner.organizationId, 'agent');
      const { page } = await openDashboard(t, browser, server);
      await openConversation(page, agent, conversationId);
      const panel = panelOf(page);

      await panel.getByLabel('New note').fill('Prefers a call back after 5pm.');
      await panel.getByRole('button', { name: 'Add note' }).click();
      await panel.getByRole('list', { name: 'Notes' }).getByText('Prefers a call back after 5pm.').waitFor();
      const notes = await server.request('GET', `/v1/conversations/${conversationId}/notes`, { token: owner.token });
      assert.equal(notes.body.data[0].body, 'Prefers a call back after 5pm.');
      assert.equal(notes.body.data[0].author.member_id, agent.memberId);

      await panel.getByRole('button', { name: 'Assign to me' }).click();
      await panel.getByRole('button', { name: 'Unassign' }).waitFor();
      const read = async () => (await server.request('GET', `/v1/conversations/${conversationId}`, { token: owner.token })).body;
      assert.equal((await read()).assignee_id, agent.memberId);

      await panel.getByLabel('State').selectOption('pending');
      await panel.getByLabel('Who answers').selectOption('agent');
      await panel.getByText('A person answers from the inbox; bots and integrations should stand back.').waitFor();
      const conversation = await read();
      assert.equal(conversation.state, 'pending');
      assert.equal(conversation.control, 'agent');
      assert.deepEqual(await unlabelledControls(page), []);
    }),
  );

  it(
    'shows a viewer the conversation and its details, with nothing to write with',
    browserTest(async (t) => {
      const { server, browser } = await setup;
      const { owner, conversationId } = await customerWrote(server, 'Just looking');
      await server.request('POST', `/v1/conversations/${conversationId}/tags`, { token: owner.token, body: { tags: ['vip'] } });
      await server.request('POST', `/v1/conversations/${conversationId}/notes`, { token: owner.token, body: { body: 'Handled by Ana last time.' } });
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      const { page } = await openDashboard(t, browser, server);
      await openConversation(page, viewer, conversationId);
      const panel = panelOf(page);

      await page.getByText('your role (viewer) cannot reply').waitFor();
      await panel.getByText('Handled by Ana last time.').waitFor();
      await panel.getByText('vip').waitFor();
      assert.equal(await composerOf(page).count(), 0);
      assert.equal(await page.getByRole('button', { name: /^(Reply to|React to)/ }).count(), 0);
      assert.equal(await panel.getByRole('button').count(), 0);
      assert.equal(await panel.getByRole('combobox').count(), 0);
      assert.equal(await panel.getByRole('textbox').count(), 0);
    }),
  );
});
