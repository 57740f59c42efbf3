import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { HOUR, SECOND } from '../../lib/clock.ts';
import { suiteScope, type Scope, type TestServer } from '../../../test/harness.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';
import {
  addMember,
  assertError,
  createConnection,
  createKey,
  inbound,
  newCustomer,
  settle,
  signUp,
  type SignedUp,
  startServerWithOwner,
  startServerWithTwoOrganizations,
} from '../../../test/factories.ts';

/** A fresh UK number in the range reserved for drama (+44 7700 900xxx), padded to stay unique per run. */
const newNumber = () => `+${newCustomer()}`;

interface StoredEvent {
  id: string;
  type: string;
  connection_id: string | null;
  object: Record<string, any>;
  previous_attributes: Record<string, unknown> | null;
}

/** The stored events of one resource, oldest first: `kind` is the type's prefix (`contact`, `conversation`). */
async function storedEvents(server: TestServer, organizationId: string, kind: string, id: string): Promise<StoredEvent[]> {
  const rows = await server.app.store.db
    .selectFrom('events')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('type', 'like', `${kind}.%`)
    .orderBy('id')
    .execute();
  return rows
    .map((row) => ({
      id: row.id,
      type: row.type,
      connection_id: row.connection_id,
      object: JSON.parse(row.data) as Record<string, any>,
      previous_attributes: row.previous_attributes === null ? null : (JSON.parse(row.previous_attributes) as Record<string, unknown>),
    }))
    .filter((event) => event.object.id === id);
}

const contactEvents = (server: TestServer, organizationId: string, contactId: string) => storedEvents(server, organizationId, 'contact', contactId);

/** A dashboard token fresh at the server's clock (they last 15 minutes). */
async function logIn(server: TestServer, member: { email: string; password: string }): Promise<string> {
  const response = await server.request('POST', '/auth/login', { body: { email: member.email, password: member.password } });
  assert.equal(response.status, 200, response.text);
  return response.body.token as string;
}

async function createContact(server: TestServer, token: string, body: Record<string, unknown> = {}) {
  const response = await server.request('POST', '/v1/contacts', { token, body: { phone_number: newNumber(), ...body } });
  assert.equal(response.status, 201, response.text);
  return response.body as Record<string, any> & { id: string; phone_number: string };
}

/** A customer's message through the sandbox from `from` (E.164 here), processed to the end; answers the stored message. */
function inboundMessage(server: TestServer, phoneNumberId: string, from: string, name = 'Ada') {
  return inbound(server, { phone_number_id: phoneNumberId }, { from: from.replace(/^\+/, ''), name });
}

describe('contacts', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => ({ server, owner } = await startServerWithOwner(suite)));

  const create = (body: Record<string, unknown> = {}, token = owner.token) => createContact(server, token, body);
  const events = (contactId: string) => contactEvents(server, owner.organizationId, contactId);
  const auditActions = async (contactId: string) =>
    (await server.request('GET', `/v1/events?target_id=${contactId}&order=asc`, { token: owner.token })).body.data.map(
      (event: { action: string }) => event.action,
    );

  describe('create, read, list', () => {
    it('create answers 201 with the contact, emits contact.created and is audited', async () => {
      const phone = newNumber();
      const response = await server.request('POST', '/v1/contacts', {
        token: owner.token,
        body: { phone_number: phone, name: 'Ada Lovelace', email: 'ada@example.com', metadata: { crm_id: 'A-1', tier: { level: 2 } } },
      });
      assert.equal(response.status, 201, response.text);
      const contact = response.body;
      assert.match(contact.id, /^ct_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.deepEqual(
        { ...contact, id: undefined },
        {
          id: undefined,
          object: 'contact',
          phone_number: phone,
          name: 'Ada Lovelace',
          email: 'ada@example.com',
          profile_name: null,
          consent: { marketing: { status: 'unknown', since: null, source: null } },
          metadata: { crm_id: 'A-1', tier: { level: 2 } },
          created_at: '2026-06-01T12:00:00.000Z',
          updated_at: '2026-06-01T12:00:00.000Z',
        },
      );
      const emitted = await events(contact.id);
      assert.deepEqual(
        emitted.map((event) => event.type),
        ['contact.created'],
      );
      assert.deepEqual(emitted[0]!.object, contact, 'the event carries the contact exactly as the API returns it');
      assert.equal(emitted[0]!.connection_id, null, 'contacts belong to the organization, not to a number');
      assert.deepEqual(await auditActions(contact.id), ['contact.created']);
    });

    it('name, email and metadata are optional', async () => {
      const contact = await create();
      assert.equal(contact.name, null);
      assert.equal(contact.email, null);
      assert.deepEqual(contact.metadata, {});
    });

    it('get returns the contact as created', async () => {
      const contact = await create({ name: 'Grace' });
      const response = await server.request('GET', `/v1/contacts/${contact.id}`, { token: owner.token });
      assert.equal(response.status, 200);
      assert.deepEqual(response.body, contact);
    });

    it('list pages with the list rules, newest first by default', async (t) => {
      const { server: own, owner: alone } = await startServerWithOwner(t);
      const made: string[] = [];
      for (let i = 0; i < 5; i++) {
        const response = await own.request('POST', '/v1/contacts', { token: alone.token, body: { phone_number: newNumber() } });
        made.push(response.body.id);
        own.clock.advance(SECOND);
      }
      const first = await own.request('GET', '/v1/contacts?limit=2', { token: alone.token });
      assert.equal(first.body.object, 'list');
      assert.deepEqual(
        first.body.data.map((c: { id: string }) => c.id),
        [made[4], made[3]],
      );
      assert.equal(first.body.has_more, true);
      assert.equal(first.body.next_cursor, made[3]);
      const second = await own.request('GET', `/v1/contacts?limit=2&after=${first.body.next_cursor}`, { token: alone.token });
      assert.deepEqual(
        second.body.data.map((c: { id: string }) => c.id),
        [made[2], made[1]],
      );
      const back = await own.request('GET', `/v1/contacts?limit=2&before=${made[1]}`, { token: alone.token });
      assert.deepEqual(
        back.body.data.map((c: { id: string }) => c.id),
        [made[3], made[2]],
      );
      const ascending = await own.request('GET', '/v1/contacts?order=asc&limit=100', { token: alone.token });
      assert.deepEqual(
        ascending.body.data.map((c: { id: string }) => c.id),
        made,
      );
      assert.equal(ascending.body.has_more, false);
      assert.equal(ascending.body.next_cursor, null);
      const window = await own.request('GET', '/v1/contacts?order=asc&created_after=2026-06-01T12:00:00.500Z&created_before=2026-06-01T12:00:03.500Z', {
        token: alone.token,
      });
      assert.deepEqual(
        window.body.data.map((c: { id: string }) => c.id),
        made.slice(1, 4),
      );
    });

    it('list filters by phone_number, exactly', async () => {
      const contact = await create();
      await create();
      const encoded = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(contact.phone_number)}`, { token: owner.token });
      assert.equal(encoded.status, 200, encoded.text);
      assert.deepEqual(
        encoded.body.data.map((c: { id: string }) => c.id),
        [contact.id],
      );
      const unencoded = await server.request('GET', `/v1/contacts?phone_number=${contact.phone_number}`, { token: owner.token });
      assert.deepEqual(
        unencoded.body.data.map((c: { id: string }) => c.id),
        [contact.id],
        'an unencoded + (read as a space) still matches',
      );
      const none = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent('+15550000000')}`, { token: owner.token });
      assert.deepEqual(none.body.data, []);
    });

    it('a repeated create with the same Idempotency-Key creates one contact', async () => {
      const body = { phone_number: newNumber(), name: 'Once' };
      const headers = { 'idempotency-key': `contacts-${randomInt(1e9)}` };
      const first = await server.request('POST', '/v1/contacts', { token: owner.token, body, headers });
      const again = await server.request('POST', '/v1/contacts', { token: owner.token, body, headers });
      assert.equal(first.status, 201);
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.equal(again.body.id, first.body.id);
    });
  });

  describe('update', () => {
    it('changes name and email, merges metadata, and emits contact.updated with only the changed fields', async () => {
      const contact = await create({ name: 'Ada', email: 'ada@example.com', metadata: { a: 1, b: 2 } });
      server.clock.advance(SECOND);
      const response = await server.request('PATCH', `/v1/contacts/${contact.id}`, {
        token: owner.token,
        body: { name: 'Ada King', metadata: { b: null, c: 3 } },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.name, 'Ada King');
      assert.equal(response.body.email, 'ada@example.com');
      assert.deepEqual(response.body.metadata, { a: 1, c: 3 });
      assert.equal(response.body.updated_at, server.clock.now().toISOString());
      assert.ok(response.body.updated_at > contact.updated_at);
      assert.equal(response.body.created_at, contact.created_at);

      const updated = (await events(contact.id)).filter((event) => event.type === 'contact.updated');
      assert.equal(updated.length, 1);
      assert.deepEqual(updated[0]!.object, response.body);
      assert.deepEqual(updated[0]!.previous_attributes, { name: 'Ada', metadata: { a: 1, b: 2 }, updated_at: contact.updated_at });
      assert.deepEqual(await auditActions(contact.id), ['contact.created', 'contact.updated']);
    });

    it('clears name and email with null', async () => {
      const contact = await create({ name: 'Ada', email: 'ada@example.com' });
      server.clock.advance(SECOND);
      const response = await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: owner.token, body: { name: null, email: null } });
      assert.equal(response.body.name, null);
      assert.equal(response.body.email, null);
      const [updated] = (await events(contact.id)).filter((event) => event.type === 'contact.updated');
      assert.deepEqual(Object.keys(updated!.previous_attributes!).sort(), ['email', 'name', 'updated_at']);
    });

    it('a change to nothing writes nothing and emits nothing', async () => {
      const contact = await create({ name: 'Same', metadata: { a: 1 } });
      server.clock.advance(SECOND);
      for (const body of [{}, { name: 'Same' }, { metadata: { a: 1 } }, { metadata: { missing: null } }]) {
        const response = await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: owner.token, body });
        assert.equal(response.status, 200, response.text);
        assert.deepEqual(response.body, contact);
      }
      assert.deepEqual(
        (await events(contact.id)).map((event) => event.type),
        ['contact.created'],
      );
    });
  });

  describe('consent', () => {
    const record = (id: string, body: Record<string, unknown>) => server.request('POST', `/v1/contacts/${id}/consent`, { token: owner.token, body });
    const history = async (id: string, query = 'order=asc') =>
      (await server.request('GET', `/v1/contacts/${id}/consent?${query}`, { token: owner.token })).body;

    it('an opt-out answers the contact with its new summary and emits contact.consent_changed', async () => {
      const contact = await create();
      server.clock.advance(SECOND);
      const response = await record(contact.id, { status: 'opted_out', source: 'keyword' });
      assert.equal(response.status, 200, response.text);
      const now = server.clock.now().toISOString();
      assert.deepEqual(response.body.consent, { marketing: { status: 'opted_out', since: now, source: 'keyword' } });
      assert.equal(response.body.updated_at, now);
      const emitted = await events(contact.id);
      assert.deepEqual(
        emitted.map((event) => event.type),
        ['contact.created', 'contact.consent_changed'],
      );
      assert.deepEqual(emitted[1]!.object, response.body);
      assert.equal(emitted[1]!.previous_attributes, null);
      assert.deepEqual((await server.request('GET', `/v1/contacts/${contact.id}`, { token: owner.token })).body, response.body);
      assert.deepEqual(await auditActions(contact.id), ['contact.created', 'contact.consent_recorded']);
    });

    it('every record is kept, and only a change of the effective status is an event', async () => {
      const contact = await create();
      server.clock.advance(SECOND);
      const optIn = await record(contact.id, { status: 'opted_in', source: 'web_form', topic: 'marketing' });
      const since = optIn.body.consent.marketing.since;
      server.clock.advance(SECOND);
      const repeat = await record(contact.id, { status: 'opted_in', source: 'agent' });
      assert.deepEqual(repeat.body, optIn.body, 'the same status again changes nothing on the contact');
      // Dated before the latest record: history only, however it differs.
      const late = await record(contact.id, { status: 'opted_out', source: 'paper_form', recorded_at: '2026-05-01T09:00:00Z' });
      assert.equal(late.body.consent.marketing.status, 'opted_in');
      assert.equal(late.body.consent.marketing.since, since);
      server.clock.advance(SECOND);
      const optOut = await record(contact.id, { status: 'opted_out', source: 'keyword' });
      assert.equal(optOut.body.consent.marketing.status, 'opted_out');
      assert.equal(optOut.body.consent.marketing.source, 'keyword');

      const changes = (await events(contact.id)).filter((event) => event.type === 'contact.consent_changed');
      assert.deepEqual(
        changes.map((event) => event.object.consent.marketing.status),
        ['opted_in', 'opted_out'],
      );
      const records = await history(contact.id);
      assert.equal(records.object, 'list');
      assert.deepEqual(
        records.data.map((r: { status: string; source: string }) => `${r.status}:${r.source}`),
        ['opted_in:web_form', 'opted_in:agent', 'opted_out:paper_form', 'opted_out:keyword'],
      );
      const [first] = records.data;
      assert.match(first.id, /^cns_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.deepEqual(
        { ...first, id: undefined },
        {
          id: undefined,
          object: 'contact_consent',
          contact_id: contact.id,
          topic: 'marketing',
          status: 'opted_in',
          source: 'web_form',
          recorded_at: since,
          created_at: since,
        },
      );
      assert.equal(records.data[2].recorded_at, '2026-05-01T09:00:00.000Z');
    });

    it('a backdated record that is still the latest sets the status, with its own time', async () => {
      const contact = await create();
      const response = await record(contact.id, { status: 'opted_in', source: 'import', recorded_at: '2026-01-15T08:30:00+01:00' });
      assert.deepEqual(response.body.consent.marketing, { status: 'opted_in', since: '2026-01-15T07:30:00.000Z', source: 'import' });
    });

    it('the history pages with the list rules', async () => {
      const contact = await create();
      for (const source of ['a', 'b', 'c']) {
        await record(contact.id, { status: 'opted_in', source });
        server.clock.advance(SECOND);
      }
      const page = await history(contact.id, 'limit=2');
      assert.deepEqual(
        page.data.map((r: { source: string }) => r.source),
        ['c', 'b'],
      );
      assert.equal(page.has_more, true);
      const rest = await history(contact.id, `limit=2&after=${page.next_cursor}`);
      assert.deepEqual(
        rest.data.map((r: { source: string }) => r.source),
        ['a'],
      );
      assert.equal(rest.has_more, false);
      const other = await create();
      const error = assertError(
        await server.request('GET', `/v1/contacts/${other.id}/consent?after=${page.next_cursor}`, { token: owner.token }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/query/after', "another contact's record is not a cursor of this list");
    });
  });

  describe('concurrency', () => {
    it('concurrent consent records settle on the status of the latest recorded_at, whatever order they commit in', async () => {
      const contact = await create();
      const times = Array.from({ length: 12 }, (_, i) => ({
        status: i % 2 === 0 ? 'opted_in' : 'opted_out',
        recorded_at: new Date(Date.UTC(2026, 4, 1, 9, i)).toISOString(),
      }));
      const shuffled = [...times].sort(() => Math.random() - 0.5);
      const answers = await Promise.all(
        shuffled.map((body) => server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: owner.token, body: { ...body, source: 'import' } })),
      );
      assert.ok(
        answers.every((answer) => answer.status === 200),
        answers.map((answer) => answer.text).join('\n'),
      );
      const latest = times[times.length - 1]!;
      const stored = await server.request('GET', `/v1/contacts/${contact.id}`, { token: owner.token });
      assert.equal(stored.body.consent.marketing.status, latest.status);
      const records = await server.request('GET', `/v1/contacts/${contact.id}/consent?limit=100`, { token: owner.token });
      assert.equal(records.body.data.length, times.length);
    });

    it('concurrent creates of one number make one contact; the others are resource_exists', async () => {
      const phone = newNumber();
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: phone } })),
      );
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
    });
  });

  describe('delete', () => {
    it('answers {id, object, deleted}, then the contact is gone from every read and write', async () => {
      const contact = await create({ name: 'Gone', email: 'gone@example.com', metadata: { a: 1 } });
      const response = await server.request('DELETE', `/v1/contacts/${contact.id}`, { token: owner.token });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, { id: contact.id, object: 'contact', deleted: true });

      assertError(await server.request('GET', `/v1/contacts/${contact.id}`, { token: owner.token }), 404, 'resource_not_found');
      assertError(await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: owner.token, body: { name: 'x' } }), 404, 'resource_not_found');
      assertError(
        await server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: owner.token, body: { status: 'opted_in', source: 'agent' } }),
        404,
        'resource_not_found',
      );
      assertError(await server.request('GET', `/v1/contacts/${contact.id}/consent`, { token: owner.token }), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/contacts/${contact.id}`, { token: owner.token }), 404, 'resource_not_found');
      const list = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(contact.phone_number)}`, { token: owner.token });
      assert.deepEqual(list.body.data, []);
      assert.deepEqual(await auditActions(contact.id), ['contact.created', 'contact.deleted']);

      const row = await server.app.store.db.selectFrom('contacts').selectAll().where('id', '=', contact.id).executeTakeFirstOrThrow();
      assert.ok(row.deleted_at, 'the row stays for the messages that point at it');
      assert.deepEqual([row.name, row.email, row.metadata], [null, null, '{}'], 'what identified the person is erased');
    });

    it('emits contact.updated showing the contact erased and deleted, as there is no contact.deleted', async () => {
      const contact = await create({ name: 'Gone', metadata: { a: 1 } });
      server.clock.advance(SECOND);
      await server.request('DELETE', `/v1/contacts/${contact.id}`, { token: owner.token });
      const [deleted, ...more] = (await events(contact.id)).filter((event) => event.type === 'contact.updated');
      assert.equal(more.length, 0);
      const now = server.clock.now().toISOString();
      assert.deepEqual(deleted!.object, { ...contact, name: null, metadata: {}, updated_at: now, deleted: true, merged_into: null });
      assert.deepEqual(deleted!.previous_attributes, { name: 'Gone', metadata: { a: 1 }, updated_at: contact.updated_at, deleted: false });
      assert.equal(deleted!.connection_id, null);
    });

    it('frees the number: a new contact may take it', async () => {
      const contact = await create();
      await server.request('DELETE', `/v1/contacts/${contact.id}`, { token: owner.token });
      const again = await create({ phone_number: contact.phone_number });
      assert.notEqual(again.id, contact.id);
      assert.equal(again.consent.marketing.status, 'unknown');
    });

    it("a deleted contact's opt-out carries over to the number's next contact, with its record", async () => {
      const contact = await create();
      const optedOut = await server.request('POST', `/v1/contacts/${contact.id}/consent`, {
        token: owner.token,
        body: { status: 'opted_out', source: 'keyword' },
      });
      await server.request('DELETE', `/v1/contacts/${contact.id}`, { token: owner.token });
      server.clock.advance(SECOND);
      const again = await create({ phone_number: contact.phone_number });
      assert.deepEqual(again.consent, optedOut.body.consent);
      const records = await server.request('GET', `/v1/contacts/${again.id}/consent`, { token: owner.token });
      assert.deepEqual(
        records.body.data.map((r: { status: string; source: string; recorded_at: string }) => [r.status, r.source, r.recorded_at]),
        [['opted_out', 'keyword', optedOut.body.consent.marketing.since]],
      );
    });

    it('an opt-in does not carry over', async () => {
      const contact = await create();
      await server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: owner.token, body: { status: 'opted_in', source: 'web_form' } });
      await server.request('DELETE', `/v1/contacts/${contact.id}`, { token: owner.token });
      const again = await create({ phone_number: contact.phone_number });
      assert.equal(again.consent.marketing.status, 'unknown');
    });

    it('after a delete, an inbound-style lookup of the number creates a new contact', async () => {
      const contact = await create({ name: 'Old' });
      await server.request('DELETE', `/v1/contacts/${contact.id}`, { token: owner.token });
      const connection = await createConnection(server, owner);
      const found = await server.app.store.db.transaction().execute((trx) =>
        server.app.services.contacts.findOrCreateForInbound(trx, {
          organizationId: owner.organizationId,
          connectionId: connection.id,
          waId: contact.phone_number.slice(1),
          profileName: 'Ada',
          at: server.clock.now(),
        }),
      );
      assert.notEqual(found.id, contact.id);
      assert.equal(found.phone_number, contact.phone_number);
      assert.equal(found.profile_name, 'Ada');
      assert.equal(found.name, null);
      const created = await events(found.id);
      assert.deepEqual(
        created.map((event) => [event.type, event.connection_id]),
        [['contact.created', connection.id]],
      );
      assert.deepEqual((await server.request('GET', `/v1/contacts/${found.id}`, { token: owner.token })).body, found);
    });
  });

  describe('bad input', () => {
    for (const phone of ['07700900123', '447700900123', '+44 7700 900123', '+44-7700-900123', '+0447700900123', '+1234567890123456', '+12345', '']) {
      it(`a phone number not in E.164 (${JSON.stringify(phone)}) is validation_failed on /phone_number`, async () => {
        const error = assertError(
          await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: phone } }),
          400,
          'validation_failed',
        );
        assert.equal(error.param, '/phone_number');
        assert.equal(error.details[0].code, 'invalid_format');
      });
    }

    it('a missing phone number is validation_failed', async () => {
      const error = assertError(await server.request('POST', '/v1/contacts', { token: owner.token, body: { name: 'Nobody' } }), 400, 'validation_failed');
      assert.equal(error.param, '/phone_number');
      assert.equal(error.details[0].code, 'missing');
    });

    it('a number another contact has is 409 resource_exists on /phone_number, and nothing is written', async () => {
      const contact = await create();
      const error = assertError(
        await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: contact.phone_number, name: 'Twin' } }),
        409,
        'resource_exists',
      );
      assert.equal(error.param, '/phone_number');
      assert.ok(error.message.includes(contact.id), 'the message names the contact that has the number');
      const list = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(contact.phone_number)}`, { token: owner.token });
      assert.equal(list.body.data.length, 1);
    });

    it('unknown fields are rejected on create, update and consent', async () => {
      const contact = await create();
      const cases = [
        ['POST', '/v1/contacts', { phone_number: newNumber(), colour: 'blue' }, '/colour'],
        ['PATCH', `/v1/contacts/${contact.id}`, { phone_number: newNumber() }, '/phone_number'],
        ['PATCH', `/v1/contacts/${contact.id}`, { profile_name: 'Me' }, '/profile_name'],
        ['PATCH', `/v1/contacts/${contact.id}`, { consent: { marketing: 'opted_in' } }, '/consent'],
        ['POST', `/v1/contacts/${contact.id}/consent`, { status: 'opted_in', source: 'agent', channel: 'sms' }, '/channel'],
      ] as const;
      for (const [method, path, body, param] of cases) {
        const error = assertError(await server.request(method, path, { token: owner.token, body }), 400, 'validation_failed');
        assert.equal(error.param, param, `${method} ${path}`);
        assert.equal(error.details[0].code, 'unknown_field');
      }
      assertError(await server.request('GET', '/v1/contacts?colour=blue', { token: owner.token }), 400, 'validation_failed');
    });

    it('an invalid email is validation_failed on /email', async () => {
      const error = assertError(
        await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: newNumber(), email: 'not-an-email' } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/email');
      assert.equal(error.details[0].code, 'invalid_format');
    });

    it('metadata over 50 keys, or with a key over 40 characters, is refused', async () => {
      const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]));
      for (const metadata of [tooMany, { ['k'.repeat(41)]: 1 }]) {
        const error = assertError(
          await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: newNumber(), metadata } }),
          400,
          'validation_failed',
        );
        assert.equal(error.param, '/metadata');
      }
      const contact = await create();
      const error = assertError(
        await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: owner.token, body: { metadata: tooMany } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/metadata');
    });

    it('merging cannot grow metadata past 50 keys, and nothing is written when it would', async () => {
      const batch = (from: number) => Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${from + i}`, i]));
      const contact = await create({ metadata: batch(0), name: 'Kept' });
      const error = assertError(
        await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: owner.token, body: { name: 'Renamed', metadata: batch(30) } }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/metadata');
      assert.equal(error.details[0].code, 'too_many');
      const after = await server.request('GET', `/v1/contacts/${contact.id}`, { token: owner.token });
      assert.deepEqual(after.body, contact);
    });

    it('consent input is checked: status, topic, source, and a time not in the future', async () => {
      const contact = await create();
      const cases = [
        [{ status: 'maybe', source: 'agent' }, '/status'],
        [{ status: 'opted_in', source: 'agent', topic: 'sms' }, '/topic'],
        [{ status: 'opted_in' }, '/source'],
        [{ status: 'opted_in', source: '' }, '/source'],
        [{ status: 'opted_in', source: 'agent', recorded_at: 'yesterday' }, '/recorded_at'],
        [{ status: 'opted_in', source: 'agent', recorded_at: new Date(server.clock.now().getTime() + SECOND).toISOString() }, '/recorded_at'],
      ] as const;
      for (const [body, param] of cases) {
        const error = assertError(await server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: owner.token, body }), 400, 'validation_failed');
        assert.equal(error.param, param, JSON.stringify(body));
      }
      const records = await server.request('GET', `/v1/contacts/${contact.id}/consent`, { token: owner.token });
      assert.deepEqual(records.body.data, [], 'a refused record is not kept');
    });

    it('a phone_number filter not in E.164 is validation_failed on /query/phone_number', async () => {
      const error = assertError(await server.request('GET', '/v1/contacts?phone_number=07700900123', { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/phone_number');
    });

    it('a malformed id is validation_failed on /path/id; an unknown one is resource_not_found', async () => {
      const error = assertError(await server.request('GET', '/v1/contacts/conn_01J00000000000000000000000', { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/path/id');
      assertError(await server.request('GET', '/v1/contacts/ct_01J00000000000000000000000', { token: owner.token }), 404, 'resource_not_found');
    });
  });

  describe('who may', () => {
    it('a viewer may read contacts and their consent, and may change nothing', async () => {
      const contact = await create();
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      assert.equal((await server.request('GET', '/v1/contacts', { token: viewer.token })).status, 200);
      assert.equal((await server.request('GET', `/v1/contacts/${contact.id}`, { token: viewer.token })).status, 200);
      assert.equal((await server.request('GET', `/v1/contacts/${contact.id}/consent`, { token: viewer.token })).status, 200);
      const refused = [
        ['POST', '/v1/contacts', { phone_number: newNumber() }],
        ['PATCH', `/v1/contacts/${contact.id}`, { name: 'x' }],
        ['DELETE', `/v1/contacts/${contact.id}`, undefined],
        ['POST', `/v1/contacts/${contact.id}/consent`, { status: 'opted_out', source: 'agent' }],
      ] as const;
      for (const [method, path, body] of refused) {
        const error = assertError(await server.request(method, path, { token: viewer.token, ...(body ? { body } : {}) }), 403, 'scope_missing');
        assert.equal(error.required_scope, 'contacts:write');
      }
      assert.equal((await server.request('GET', `/v1/contacts/${contact.id}`, { token: owner.token })).body.name, null);
    });

    it('an agent may create and change contacts', async () => {
      const agent = await addMember(server, owner.organizationId, 'agent');
      const contact = await create({}, agent.token);
      assert.equal(
        (await server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: agent.token, body: { status: 'opted_in', source: 'agent' } })).status,
        200,
      );
    });

    it('a key without contacts:read or contacts:write is refused with scope_missing', async () => {
      const contact = await create();
      const readOnly = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['contacts:read'] });
      const unrelated = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['messages:read'] });
      assert.equal((await server.request('GET', `/v1/contacts/${contact.id}`, { token: readOnly.key })).status, 200);
      const write = assertError(
        await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: readOnly.key, body: { name: 'x' } }),
        403,
        'scope_missing',
      );
      assert.equal(write.required_scope, 'contacts:write');
      const read = assertError(await server.request('GET', '/v1/contacts', { token: unrelated.key }), 403, 'scope_missing');
      assert.equal(read.required_scope, 'contacts:read');
    });

    it('contacts are organization-wide: a connection key and a test key see the same contacts', async () => {
      const contact = await create();
      const connection = await createConnection(server, owner);
      const connectionKey = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
      const testKey = await createKey(server, owner.token, { kind: 'organization', mode: 'test' });
      for (const token of [connectionKey.key, testKey.key]) {
        assert.deepEqual((await server.request('GET', `/v1/contacts/${contact.id}`, { token })).body, contact);
      }
    });
  });
});

describe('contacts across organizations', () => {
  let server: TestServer;
  let alpha: SignedUp;
  let beta: SignedUp;
  const suite = suiteScope();
  before(async () => {
    ({ server, alpha, beta } = await startServerWithTwoOrganizations(suite));
  });

  it("another organization's contact is 404 everywhere, and its number is free in this one", async () => {
    const phone = newNumber();
    const theirs = (await server.request('POST', '/v1/contacts', { token: beta.token, body: { phone_number: phone, name: 'Beta customer' } })).body;
    const alphaKey = await createKey(server, alpha.token, { kind: 'organization', mode: 'live' });
    for (const token of [alpha.token, alphaKey.key]) {
      assertError(await server.request('GET', `/v1/contacts/${theirs.id}`, { token }), 404, 'resource_not_found');
      assertError(await server.request('PATCH', `/v1/contacts/${theirs.id}`, { token, body: { name: 'mine now' } }), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/contacts/${theirs.id}`, { token }), 404, 'resource_not_found');
      assertError(
        await server.request('POST', `/v1/contacts/${theirs.id}/consent`, { token, body: { status: 'opted_out', source: 'agent' } }),
        404,
        'resource_not_found',
      );
      assertError(await server.request('GET', `/v1/contacts/${theirs.id}/consent`, { token }), 404, 'resource_not_found');
      const cursor = assertError(await server.request('GET', `/v1/contacts?after=${theirs.id}`, { token }), 400, 'validation_failed');
      assert.equal(cursor.param, '/query/after');
      const byNumber = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(phone)}`, { token });
      assert.deepEqual(byNumber.body.data, []);
    }
    const mine = await server.request('POST', '/v1/contacts', { token: alpha.token, body: { phone_number: phone } });
    assert.equal(mine.status, 201, 'numbers are unique per organization only');
    const list = await server.request('GET', '/v1/contacts', { token: alpha.token });
    assert.deepEqual(
      list.body.data.map((c: { id: string }) => c.id),
      [mine.body.id],
    );
    // Nothing of Beta's changed.
    const still = await server.request('GET', `/v1/contacts/${theirs.id}`, { token: beta.token });
    assert.deepEqual(still.body, theirs);
    assert.deepEqual(
      (await contactEvents(server, beta.organizationId, theirs.id)).map((event) => event.type),
      ['contact.created'],
    );
  });
});

describe('contacts from inbound messages', () => {
  let server: TestServer;
  let owner: SignedUp;
  let connection: { id: string; phone_number_id: string };
  let receiver: Receiver;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    connection = await createConnection(server, owner);
    receiver = await startReceiver(suite);
  });

  it('a message from a new number creates a contact the API shows; after a delete, the next message creates another', async () => {
    const phone = newNumber();
    const first = await inboundMessage(server, connection.phone_number_id, phone);
    const listed = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(phone)}`, { token: owner.token });
    assert.deepEqual(
      listed.body.data.map((c: { id: string; profile_name: string }) => [c.id, c.profile_name]),
      [[first.contact_id, 'Ada']],
    );
    assert.equal(listed.body.data[0].consent.marketing.status, 'unknown');

    await server.request('POST', `/v1/contacts/${first.contact_id}/consent`, { token: owner.token, body: { status: 'opted_out', source: 'keyword' } });
    assert.equal((await server.request('DELETE', `/v1/contacts/${first.contact_id}`, { token: owner.token })).status, 200);
    const second = await inboundMessage(server, connection.phone_number_id, phone);
    assert.notEqual(second.contact_id, first.contact_id);
    assert.notEqual(second.conversation_id, first.conversation_id, "the deleted contact's conversation stays with it");
    const contact = await server.request('GET', `/v1/contacts/${second.contact_id}`, { token: owner.token });
    assert.equal(contact.body.consent.marketing.status, 'opted_out', 'the opt-out outlives the deleted contact');
    const old = await server.app.store.db.selectFrom('messages').select('contact_id').where('id', '=', first.id).executeTakeFirstOrThrow();
    assert.equal(old.contact_id, first.contact_id, 'old messages keep their contact');
  });

  it('subscribed endpoints receive contact events, contact.updated with previous_attributes', async () => {
    const endpoint = await server.request('POST', '/v1/webhook-endpoints', {
      token: owner.token,
      body: { url: receiver.url, events: ['contact.created', 'contact.updated', 'contact.consent_changed'] },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    const contact = (await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: newNumber(), name: 'Ada' } })).body;
    await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: owner.token, body: { email: 'ada@example.com' } });
    await server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: owner.token, body: { status: 'opted_in', source: 'web_form' } });
    await server.app.worker.drain();
    const delivered = receiver.received.map(
      (request) => JSON.parse(request.body) as { type: string; data: { object: { id: string } }; previous_attributes?: Record<string, unknown> },
    );
    const ours = delivered.filter((event) => event.data.object.id === contact.id);
    assert.deepEqual(ours.map((event) => event.type).sort(), ['contact.consent_changed', 'contact.created', 'contact.updated']);
    const updated = ours.find((event) => event.type === 'contact.updated')!;
    assert.deepEqual(updated.previous_attributes, { email: null });
    assert.equal(ours.find((event) => event.type === 'contact.created')!.previous_attributes, undefined);
  });
});

type Numbered = { id: string; phone_number_id: string };

/**
 * A server whose owner has two live numbers, Support and Sales, and an organization key: the clock
 * moves by hours in these suites, past a dashboard token's 15 minutes.
 */
async function startWithTwoNumbers(scope: Scope): Promise<{ server: TestServer; owner: SignedUp; token: string; support: Numbered; sales: Numbered }> {
  const { server, owner } = await startServerWithOwner(scope);
  const support = await createConnection(server, owner, { name: 'Support' });
  const sales = await createConnection(server, owner, { name: 'Sales' });
  const token = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  return { server, owner, token, support, sales };
}

describe('merging contacts', () => {
  let server: TestServer;
  let owner: SignedUp;
  let token: string;
  let support: Numbered;
  let sales: Numbered;
  const suite = suiteScope();
  before(async () => ({ server, owner, token, support, sales } = await startWithTwoNumbers(suite)));

  const create = (body: Record<string, unknown> = {}) => createContact(server, token, body);
  const merge = (id: string, body: unknown, as = token) => server.request('POST', `/v1/contacts/${id}/merge`, { token: as, body });
  const get = (id: string) => server.request('GET', `/v1/contacts/${id}`, { token });
  const messageRow = (id: string) => server.app.store.db.selectFrom('messages').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const conversationRow = (id: string) => server.app.store.db.selectFrom('conversations').selectAll().where('id', '=', id).executeTakeFirst();
  const consentHistory = async (id: string) =>
    (await server.request('GET', `/v1/contacts/${id}/consent?order=asc`, { token })).body.data.map(
      (r: { status: string; source: string }) => `${r.status}:${r.source}`,
    );

  /**
   * A survivor made through the API who wrote to support, and a source (another number of the same
   * person) who wrote to support and to sales, with an email and metadata of its own.
   */
  async function pair() {
    const created = await create({ name: 'Ada Lovelace', metadata: { crm_id: 'A-1', tier: 'gold' } });
    const survivorMessage = await inboundMessage(server, support.phone_number_id, created.phone_number, 'Ada');
    server.clock.advance(HOUR);
    const sourcePhone = newNumber();
    const onSupport = await inboundMessage(server, support.phone_number_id, sourcePhone, 'Ada L');
    const onSales = await inboundMessage(server, sales.phone_number_id, sourcePhone, 'Ada L');
    const source = await server.request('PATCH', `/v1/contacts/${onSupport.contact_id}`, {
      token,
      body: { email: 'ada@example.com', metadata: { tier: 'silver', newsletter: true } },
    });
    server.clock.advance(HOUR);
    return { survivor: (await get(created.id)).body, source: source.body, survivorMessage, onSupport, onSales };
  }

  describe('what moves', () => {
    it('the survivor keeps its fields, fills those it lacks from the source, and combines metadata with its own keys winning', async () => {
      const { survivor, source } = await pair();
      const response = await merge(survivor.id, { source_contact_id: source.id });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, {
        ...survivor,
        email: 'ada@example.com',
        metadata: { crm_id: 'A-1', tier: 'gold', newsletter: true },
        updated_at: server.clock.now().toISOString(),
      });
      assert.deepEqual((await get(survivor.id)).body, response.body);
    });

    it("messages and conversations move: threads on a shared connection are folded into the survivor's, the others change contact", async () => {
      const { survivor, source, survivorMessage, onSupport, onSales } = await pair();
      assert.equal((await merge(survivor.id, { source_contact_id: source.id })).status, 200);

      const [kept, folded, moved] = await Promise.all([messageRow(survivorMessage.id), messageRow(onSupport.id), messageRow(onSales.id)]);
      assert.deepEqual([kept.contact_id, folded.contact_id, moved.contact_id], [survivor.id, survivor.id, survivor.id]);
      assert.equal(folded.conversation_id, survivorMessage.conversation_id, "the source's support thread joined the survivor's");
      assert.equal(await conversationRow(onSupport.conversation_id), undefined, 'the folded conversation is gone');
      assert.equal(moved.conversation_id, onSales.conversation_id, 'a thread on a connection only the source used keeps its id');
      assert.equal((await conversationRow(onSales.conversation_id))!.contact_id, survivor.id);
      const thread = (await conversationRow(survivorMessage.conversation_id))!;
      assert.equal(thread.last_inbound_at, onSupport.sent_at, 'the later clocks are kept');
      assert.equal(thread.last_message_at, onSupport.sent_at);
    });

    it('the source is deleted: 404 everywhere, and its number gets a new contact with its next message', async () => {
      const { survivor, source } = await pair();
      await merge(survivor.id, { source_contact_id: source.id });
      assertError(await get(source.id), 404, 'resource_not_found');
      assertError(await server.request('GET', `/v1/contacts/${source.id}/consent`, { token }), 404, 'resource_not_found');
      const row = await server.app.store.db.selectFrom('contacts').selectAll().where('id', '=', source.id).executeTakeFirstOrThrow();
      assert.ok(row.deleted_at);
      assert.deepEqual([row.name, row.email, row.profile_name, row.metadata], [null, null, null, '{}']);
      const later = await inboundMessage(server, support.phone_number_id, source.phone_number, 'Ada L');
      assert.notEqual(later.contact_id, source.id);
      assert.notEqual(later.contact_id, survivor.id);
    });

    it("consent records move, and the survivor's summary becomes the merged history's latest: contact.consent_changed", async () => {
      const { survivor, source } = await pair();
      await server.request('POST', `/v1/contacts/${survivor.id}/consent`, { token, body: { status: 'opted_in', source: 'web_form' } });
      server.clock.advance(SECOND);
      const optedOut = await server.request('POST', `/v1/contacts/${source.id}/consent`, { token, body: { status: 'opted_out', source: 'keyword' } });
      server.clock.advance(SECOND);
      const response = await merge(survivor.id, { source_contact_id: source.id });
      assert.deepEqual(response.body.consent, optedOut.body.consent);
      assert.deepEqual(await consentHistory(survivor.id), ['opted_in:web_form', 'opted_out:keyword']);
      const changed = (await contactEvents(server, owner.organizationId, survivor.id)).filter((event) => event.type === 'contact.consent_changed');
      assert.deepEqual(changed.at(-1)!.object, response.body);
    });

    it("a source record older than the survivor's latest changes nothing, and no contact.consent_changed", async () => {
      const { survivor, source } = await pair();
      await server.request('POST', `/v1/contacts/${source.id}/consent`, {
        token,
        body: { status: 'opted_out', source: 'paper_form', recorded_at: '2026-01-01T00:00:00Z' },
      });
      const optedIn = await server.request('POST', `/v1/contacts/${survivor.id}/consent`, { token, body: { status: 'opted_in', source: 'web_form' } });
      const before = (await contactEvents(server, owner.organizationId, survivor.id)).length;
      const response = await merge(survivor.id, { source_contact_id: source.id });
      assert.deepEqual(response.body.consent, optedIn.body.consent);
      assert.deepEqual(await consentHistory(survivor.id), ['opted_out:paper_form', 'opted_in:web_form']);
      const emitted = (await contactEvents(server, owner.organizationId, survivor.id)).slice(before);
      assert.deepEqual(
        emitted.map((event) => event.type),
        ['contact.updated'],
      );
    });

    it("a folded thread takes the source's state only when the survivor's is closed and the source's is not", async () => {
      const { survivor, source, survivorMessage } = await pair();
      await server.app.store.db.updateTable('conversations').set({ state: 'closed' }).where('id', '=', survivorMessage.conversation_id).execute();
      await merge(survivor.id, { source_contact_id: source.id });
      assert.equal((await conversationRow(survivorMessage.conversation_id))!.state, 'open');

      const second = await pair();
      await server.app.store.db.updateTable('conversations').set({ state: 'pending' }).where('id', '=', second.survivorMessage.conversation_id).execute();
      await server.app.store.db.updateTable('conversations').set({ state: 'closed' }).where('id', '=', second.onSupport.conversation_id).execute();
      await merge(second.survivor.id, { source_contact_id: second.source.id });
      assert.equal((await conversationRow(second.survivorMessage.conversation_id))!.state, 'pending');
    });
  });

  describe('events and the audit log', () => {
    it('contact.updated for the survivor with previous_attributes, and for the source showing it deleted and merged_into', async () => {
      const { survivor, source } = await pair();
      const response = await merge(survivor.id, { source_contact_id: source.id });
      const now = server.clock.now().toISOString();
      const [survivorEvent] = (await contactEvents(server, owner.organizationId, survivor.id)).filter((event) => event.type === 'contact.updated').slice(-1);
      assert.deepEqual(survivorEvent!.object, response.body);
      assert.deepEqual(survivorEvent!.previous_attributes, { email: null, metadata: survivor.metadata, updated_at: survivor.updated_at });
      assert.equal(survivorEvent!.connection_id, null);

      const [sourceEvent] = (await contactEvents(server, owner.organizationId, source.id)).slice(-1);
      assert.equal(sourceEvent!.type, 'contact.updated');
      assert.deepEqual(sourceEvent!.object, {
        ...source,
        name: null,
        email: null,
        profile_name: null,
        metadata: {},
        updated_at: now,
        deleted: true,
        merged_into: survivor.id,
      });
      assert.deepEqual(sourceEvent!.previous_attributes, {
        email: source.email,
        profile_name: source.profile_name,
        metadata: source.metadata,
        updated_at: source.updated_at,
        deleted: false,
        merged_into: null,
      });
    });

    it('conversation.updated for each conversation that changed, with previous_attributes', async () => {
      const { survivor, source, survivorMessage, onSupport, onSales } = await pair();
      await merge(survivor.id, { source_contact_id: source.id });
      const [moved] = (await storedEvents(server, owner.organizationId, 'conversation', onSales.conversation_id)).filter(
        (event) => event.type === 'conversation.updated',
      );
      assert.equal(moved!.object.contact_id, survivor.id);
      assert.deepEqual(Object.keys(moved!.previous_attributes!).sort(), ['contact_id', 'updated_at']);
      assert.equal(moved!.previous_attributes!.contact_id, source.id);
      assert.equal(moved!.connection_id, sales.id);
      const [kept] = (await storedEvents(server, owner.organizationId, 'conversation', survivorMessage.conversation_id)).filter(
        (event) => event.type === 'conversation.updated',
      );
      assert.equal(kept!.object.last_inbound_at, onSupport.sent_at);
      assert.equal(kept!.previous_attributes!.last_inbound_at, survivorMessage.sent_at);
      assert.equal(
        (await storedEvents(server, owner.organizationId, 'conversation', onSupport.conversation_id)).filter((event) => event.type === 'conversation.updated')
          .length,
        0,
      );
    });

    it('the audit log records the merge on the survivor and the deletion on the source', async () => {
      const { survivor, source } = await pair();
      await merge(survivor.id, { source_contact_id: source.id });
      const dashboard = await logIn(server, owner);
      const entries = async (id: string) => (await server.request('GET', `/v1/events?target_id=${id}&order=asc`, { token: dashboard })).body.data;
      const merged = (await entries(survivor.id)).at(-1);
      assert.equal(merged.action, 'contact.merged');
      assert.deepEqual(merged.data, {
        source_contact_id: source.id,
        fields: ['email', 'metadata'],
        consents_moved: 0,
        conversations_moved: 1,
        conversations_folded: 1,
        messages_moved: 2,
      });
      const deleted = (await entries(source.id)).at(-1);
      assert.equal(deleted.action, 'contact.deleted');
      assert.equal(deleted.data.merged_into, survivor.id);
    });
  });

  describe('bad input', () => {
    it('merging a contact into itself is validation_failed on /source_contact_id', async () => {
      const contact = await create();
      const error = assertError(await merge(contact.id, { source_contact_id: contact.id }), 400, 'validation_failed');
      assert.equal(error.param, '/source_contact_id');
      assert.deepEqual((await get(contact.id)).body, contact);
    });

    it("an unknown, deleted or other organization's contact, on either side, is resource_not_found naming the field, and nothing changes", async () => {
      const other = await signUp(server, { organizationName: 'Other' });
      const theirs = await createContact(server, other.token);
      const deleted = await create();
      await server.request('DELETE', `/v1/contacts/${deleted.id}`, { token });
      const mine = await create({ name: 'Mine' });
      const unknown = 'ct_01J00000000000000000000000';
      for (const [id, sourceId, param] of [
        [mine.id, unknown, '/source_contact_id'],
        [mine.id, theirs.id, '/source_contact_id'],
        [mine.id, deleted.id, '/source_contact_id'],
        [unknown, mine.id, '/path/id'],
        [theirs.id, mine.id, '/path/id'],
        [deleted.id, mine.id, '/path/id'],
      ] as const) {
        const error = assertError(await merge(id, { source_contact_id: sourceId }), 404, 'resource_not_found');
        assert.equal(error.param, param, `${id} <- ${sourceId}`);
      }
      assert.deepEqual((await get(mine.id)).body, mine);
      assert.deepEqual((await server.request('GET', `/v1/contacts/${theirs.id}`, { token: other.token })).body, theirs);
    });

    it('a missing, malformed or unknown body field is validation_failed', async () => {
      const [contact, another] = [await create(), await create()];
      for (const [body, param, code] of [
        [{}, '/source_contact_id', 'missing'],
        [{ source_contact_id: 'conn_01J00000000000000000000000' }, '/source_contact_id', 'invalid_format'],
        [{ source_contact_id: another.id, keep: 'name' }, '/keep', 'unknown_field'],
      ] as const) {
        const error = assertError(await merge(contact.id, body), 400, 'validation_failed');
        assert.equal(error.param, param, JSON.stringify(body));
        assert.equal(error.details[0].code, code);
      }
      assert.equal((await get(another.id)).status, 200);
    });

    it('metadata that would pass 50 keys once combined is refused, and nothing moves', async () => {
      const keys = (prefix: string) => Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`${prefix}${i}`, i]));
      const survivor = await create({ metadata: keys('a') });
      const message = await inboundMessage(server, support.phone_number_id, newNumber());
      await server.request('PATCH', `/v1/contacts/${message.contact_id}`, { token, body: { metadata: keys('b') } });
      const error = assertError(await merge(survivor.id, { source_contact_id: message.contact_id }), 400, 'validation_failed');
      assert.equal(error.param, '/source_contact_id');
      assert.equal(error.details[0].code, 'too_many');
      assert.equal((await get(message.contact_id)).status, 200);
      assert.equal((await messageRow(message.id)).contact_id, message.contact_id);
    });

    it('merging needs contacts:write', async () => {
      const [contact, another] = [await create(), await create()];
      const viewer = await addMember(server, owner.organizationId, 'viewer');
      const readOnly = await createKey(server, await logIn(server, owner), { kind: 'organization', mode: 'live', scopes: ['contacts:read'] });
      for (const refused of [viewer.token, readOnly.key]) {
        const error = assertError(await merge(contact.id, { source_contact_id: another.id }, refused), 403, 'scope_missing');
        assert.equal(error.required_scope, 'contacts:write');
      }
    });

    it('a repeated merge with the same Idempotency-Key replays the answer; without one, the source is gone', async () => {
      const [contact, another] = [await create(), await create()];
      const headers = { 'idempotency-key': `merge-${randomInt(1e9)}` };
      const first = await server.request('POST', `/v1/contacts/${contact.id}/merge`, { token, body: { source_contact_id: another.id }, headers });
      const again = await server.request('POST', `/v1/contacts/${contact.id}/merge`, { token, body: { source_contact_id: another.id }, headers });
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.deepEqual(again.body, first.body);
      assertError(await merge(contact.id, { source_contact_id: another.id }), 404, 'resource_not_found');
    });
  });

  describe('concurrency', () => {
    it("a merge racing a message from the source's number never leaves the message on the deleted source", async () => {
      for (let round = 0; round < 6; round++) {
        const survivor = await create();
        const sourcePhone = newNumber();
        const first = await inboundMessage(server, support.phone_number_id, sourcePhone);
        const sent = await server.request('POST', '/sandbox/control/inbound', {
          body: { phone_number_id: support.phone_number_id, from: sourcePhone.slice(1), type: 'text', text: 'again' },
        });
        const [merged] = await Promise.all([merge(survivor.id, { source_contact_id: first.contact_id }), settle(server)]);
        assert.equal(merged.status, 200, merged.text);
        await server.app.worker.drain();
        const message = await server.app.store.db
          .selectFrom('messages')
          .selectAll()
          .where('provider_message_id', '=', sent.body.message_id)
          .executeTakeFirstOrThrow();
        const contact = await server.app.store.db.selectFrom('contacts').selectAll().where('id', '=', message.contact_id).executeTakeFirstOrThrow();
        assert.equal(contact.deleted_at, null, 'the message is on a live contact');
        // Before the merge it moved with the source's thread; after it, the number's new contact has it.
        assert.ok(contact.id === survivor.id || contact.phone_number === sourcePhone, `message on ${contact.id}`);
        assert.equal((await conversationRow(message.conversation_id))!.contact_id, contact.id);
        assert.equal((await messageRow(first.id)).contact_id, survivor.id);
      }
    });
  });
});

describe('the 24-hour window', () => {
  let server: TestServer;
  let owner: SignedUp;
  let token: string;
  let support: Numbered;
  let sales: Numbered;
  let sandboxTest: Numbered;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner, token, support, sales } = await startWithTwoNumbers(suite));
    sandboxTest = await createConnection(server, owner, { name: 'Trying things', test: true });
  });

  const window = (id: string, query = '', as = token) => server.request('GET', `/v1/contacts/${id}/window${query}`, { token: as });
  const plusDay = (iso: string) => new Date(Date.parse(iso) + 24 * HOUR).toISOString();

  it('a contact who never wrote has a closed window and no times', async () => {
    const contact = await createContact(server, token);
    const response = await window(contact.id);
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body, { object: 'window', contact_id: contact.id, connection_id: null, open: false, last_inbound_at: null, expires_at: null });
    assert.equal((await window(contact.id, `?connection_id=${support.id}`)).body.connection_id, support.id);
  });

  it("is open for 24 hours after the customer's last message, on that connection only", async () => {
    const message = await inboundMessage(server, support.phone_number_id, newNumber());
    const expected = {
      object: 'window',
      contact_id: message.contact_id,
      connection_id: support.id,
      open: true,
      last_inbound_at: message.sent_at,
      expires_at: plusDay(message.sent_at!),
    };
    assert.deepEqual((await window(message.contact_id)).body, expected);
    assert.deepEqual((await window(message.contact_id, `?connection_id=${support.id}`)).body, expected);
    assert.deepEqual((await window(message.contact_id, `?connection_id=${sales.id}`)).body, {
      object: 'window',
      contact_id: message.contact_id,
      connection_id: sales.id,
      open: false,
      last_inbound_at: null,
      expires_at: null,
    });
    server.clock.set(Date.parse(expected.expires_at) - SECOND);
    assert.equal((await window(message.contact_id)).body.open, true);
    server.clock.advance(SECOND);
    assert.deepEqual((await window(message.contact_id)).body, { ...expected, open: false }, 'closed at 24 hours, still saying when');
  });

  it('without connection_id, it is the window of the connection the contact last wrote to, among those the credential sees', async () => {
    const phone = newNumber();
    const first = await inboundMessage(server, support.phone_number_id, phone);
    server.clock.advance(HOUR);
    await inboundMessage(server, sales.phone_number_id, phone);
    server.clock.advance(HOUR);
    await inboundMessage(server, sandboxTest.phone_number_id, phone);
    const dashboard = await logIn(server, owner);
    const supportKey = await createKey(server, dashboard, { kind: 'connection', mode: 'live', connection_id: support.id });
    const testKey = await createKey(server, dashboard, { kind: 'organization', mode: 'test' });
    const connectionOf = async (as: string) => (await window(first.contact_id, '', as)).body.connection_id;
    assert.equal(await connectionOf(dashboard), sandboxTest.id, 'a dashboard token sees every connection');
    assert.equal(await connectionOf(token), sandboxTest.id, 'a live organization key sees every connection, test ones included');
    assert.equal(await connectionOf(testKey.key), sandboxTest.id);
    assert.equal(await connectionOf(supportKey.key), support.id, 'a connection key sees its own');
    server.clock.advance(HOUR);
    await inboundMessage(server, sales.phone_number_id, phone);
    assert.equal(await connectionOf(token), sales.id);
    assert.equal(await connectionOf(testKey.key), sandboxTest.id, 'a test key sees test connections only');
  });

  it("another organization's contact, a deleted one, or a connection the credential cannot see is resource_not_found", async () => {
    const other = await signUp(server, { organizationName: 'Other' });
    const theirs = await createContact(server, other.token);
    const theirConnection = await createConnection(server, other);
    const deleted = await createContact(server, token);
    await server.request('DELETE', `/v1/contacts/${deleted.id}`, { token });
    const contact = await createContact(server, token);
    assertError(await window(theirs.id), 404, 'resource_not_found');
    assertError(await window(deleted.id), 404, 'resource_not_found');
    const supportKey = await createKey(server, await logIn(server, owner), { kind: 'connection', mode: 'live', connection_id: support.id });
    for (const [query, as] of [
      [`?connection_id=${theirConnection.id}`, token],
      ['?connection_id=conn_01J00000000000000000000000', token],
      [`?connection_id=${sales.id}`, supportKey.key],
    ] as const) {
      const error = assertError(await window(contact.id, query, as), 404, 'resource_not_found');
      assert.equal(error.param, '/query/connection_id');
    }
  });

  it('a malformed connection_id or an unknown query parameter is validation_failed', async () => {
    const contact = await createContact(server, token);
    assert.equal(assertError(await window(contact.id, '?connection_id=ct_01J00000000000000000000000'), 400, 'validation_failed').param, '/query/connection_id');
    assertError(await window(contact.id, '?channel=sms'), 400, 'validation_failed');
  });

  it('reading it needs contacts:read', async () => {
    const contact = await createContact(server, token);
    const readOnly = await createKey(server, await logIn(server, owner), { kind: 'organization', mode: 'live', scopes: ['contacts:read'] });
    const messagesOnly = await createKey(server, await logIn(server, owner), { kind: 'organization', mode: 'live', scopes: ['messages:read'] });
    assert.equal((await window(contact.id, '', readOnly.key)).status, 200);
    assert.equal(assertError(await window(contact.id, '', messagesOnly.key), 403, 'scope_missing').required_scope, 'contacts:read');
  });
});
