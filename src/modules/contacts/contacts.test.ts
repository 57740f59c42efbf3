import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SECOND } from '../../lib/clock.ts';
import { startServer, type TestServer } from '../../../test/harness.ts';
import { startReceiver, type Receiver } from '../../../test/receiver.ts';
import { addMember, assertError, createConnection, createKey, signUp, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';

/** A fresh UK number in the range reserved for drama (+44 7700 900xxx), padded to stay unique per run. */
const newNumber = () => `+4477009${String(randomInt(0, 1_000_000)).padStart(6, '0')}`;

interface StoredEvent {
  id: string;
  type: string;
  connection_id: string | null;
  object: Record<string, any>;
  previous_attributes: Record<string, unknown> | null;
}

async function contactEvents(server: TestServer, organizationId: string, contactId: string): Promise<StoredEvent[]> {
  const rows = await server.app.store.db.selectFrom('events').selectAll().where('organization_id', '=', organizationId).where('type', 'like', 'contact.%').orderBy('id').execute();
  return rows
    .map((row) => ({
      id: row.id, type: row.type, connection_id: row.connection_id,
      object: JSON.parse(row.data) as Record<string, any>,
      previous_attributes: row.previous_attributes === null ? null : (JSON.parse(row.previous_attributes) as Record<string, unknown>),
    }))
    .filter((event) => event.object.id === contactId);
}

describe('contacts', () => {
  let server: TestServer;
  let owner: SignedUp;
  before(async () => ({ server, owner } = await startServerWithOwner()));
  after(() => server.close());

  const create = async (body: Record<string, unknown> = {}, token = owner.token) => {
    const response = await server.request('POST', '/v1/contacts', { token, body: { phone_number: newNumber(), ...body } });
    assert.equal(response.status, 201, response.text);
    return response.body as Record<string, any> & { id: string; phone_number: string };
  };
  const events = (contactId: string) => contactEvents(server, owner.organizationId, contactId);
  const auditActions = async (contactId: string) =>
    (await server.request('GET', `/v1/events?target_id=${contactId}&order=asc`, { token: owner.token })).body.data.map((event: { action: string }) => event.action);

  describe('create, read, list', () => {
    it('create answers 201 with the contact, emits contact.created and is audited', async () => {
      const phone = newNumber();
      const response = await server.request('POST', '/v1/contacts', {
        token: owner.token, body: { phone_number: phone, name: 'Ada Lovelace', email: 'ada@example.com', metadata: { crm_id: 'A-1', tier: { level: 2 } } },
      });
      assert.equal(response.status, 201, response.text);
      const contact = response.body;
      assert.match(contact.id, /^ct_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.deepEqual({ ...contact, id: undefined }, {
        id: undefined, object: 'contact', phone_number: phone, name: 'Ada Lovelace', email: 'ada@example.com', profile_name: null,
        consent: { marketing: { status: 'unknown', since: null, source: null } },
        metadata: { crm_id: 'A-1', tier: { level: 2 } },
        created_at: '2026-06-01T12:00:00.000Z', updated_at: '2026-06-01T12:00:00.000Z',
      });
      const emitted = await events(contact.id);
      assert.deepEqual(emitted.map((event) => event.type), ['contact.created']);
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

    it('list pages with the list rules, newest first by default', async () => {
      const { server: own, owner: alone } = await startServerWithOwner();
      try {
        const made: string[] = [];
        for (let i = 0; i < 5; i++) {
          const response = await own.request('POST', '/v1/contacts', { token: alone.token, body: { phone_number: newNumber() } });
          made.push(response.body.id);
          own.clock.advance(SECOND);
        }
        const first = await own.request('GET', '/v1/contacts?limit=2', { token: alone.token });
        assert.equal(first.body.object, 'list');
        assert.deepEqual(first.body.data.map((c: { id: string }) => c.id), [made[4], made[3]]);
        assert.equal(first.body.has_more, true);
        assert.equal(first.body.next_cursor, made[3]);
        const second = await own.request('GET', `/v1/contacts?limit=2&after=${first.body.next_cursor}`, { token: alone.token });
        assert.deepEqual(second.body.data.map((c: { id: string }) => c.id), [made[2], made[1]]);
        const back = await own.request('GET', `/v1/contacts?limit=2&before=${made[1]}`, { token: alone.token });
        assert.deepEqual(back.body.data.map((c: { id: string }) => c.id), [made[3], made[2]]);
        const ascending = await own.request('GET', '/v1/contacts?order=asc&limit=100', { token: alone.token });
        assert.deepEqual(ascending.body.data.map((c: { id: string }) => c.id), made);
        assert.equal(ascending.body.has_more, false);
        assert.equal(ascending.body.next_cursor, null);
        const window = await own.request('GET', '/v1/contacts?order=asc&created_after=2026-06-01T12:00:00.500Z&created_before=2026-06-01T12:00:03.500Z', { token: alone.token });
        assert.deepEqual(window.body.data.map((c: { id: string }) => c.id), made.slice(1, 4));
      } finally {
        await own.close();
      }
    });

    it('list filters by phone_number, exactly', async () => {
      const contact = await create();
      await create();
      const encoded = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(contact.phone_number)}`, { token: owner.token });
      assert.equal(encoded.status, 200, encoded.text);
      assert.deepEqual(encoded.body.data.map((c: { id: string }) => c.id), [contact.id]);
      const unencoded = await server.request('GET', `/v1/contacts?phone_number=${contact.phone_number}`, { token: owner.token });
      assert.deepEqual(unencoded.body.data.map((c: { id: string }) => c.id), [contact.id], 'an unencoded + (read as a space) still matches');
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
      const response = await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: owner.token, body: { name: 'Ada King', metadata: { b: null, c: 3 } } });
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
      assert.deepEqual((await events(contact.id)).map((event) => event.type), ['contact.created']);
    });
  });

  describe('consent', () => {
    const record = (id: string, body: Record<string, unknown>) => server.request('POST', `/v1/contacts/${id}/consent`, { token: owner.token, body });
    const history = async (id: string, query = 'order=asc') => (await server.request('GET', `/v1/contacts/${id}/consent?${query}`, { token: owner.token })).body;

    it('an opt-out answers the contact with its new summary and emits contact.consent_changed', async () => {
      const contact = await create();
      server.clock.advance(SECOND);
      const response = await record(contact.id, { status: 'opted_out', source: 'keyword' });
      assert.equal(response.status, 200, response.text);
      const now = server.clock.now().toISOString();
      assert.deepEqual(response.body.consent, { marketing: { status: 'opted_out', since: now, source: 'keyword' } });
      assert.equal(response.body.updated_at, now);
      const emitted = await events(contact.id);
      assert.deepEqual(emitted.map((event) => event.type), ['contact.created', 'contact.consent_changed']);
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
      assert.deepEqual(changes.map((event) => event.object.consent.marketing.status), ['opted_in', 'opted_out']);
      const records = await history(contact.id);
      assert.equal(records.object, 'list');
      assert.deepEqual(records.data.map((r: { status: string; source: string }) => `${r.status}:${r.source}`), ['opted_in:web_form', 'opted_in:agent', 'opted_out:paper_form', 'opted_out:keyword']);
      const [first] = records.data;
      assert.match(first.id, /^cns_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.deepEqual({ ...first, id: undefined }, {
        id: undefined, object: 'contact_consent', contact_id: contact.id, topic: 'marketing', status: 'opted_in', source: 'web_form', recorded_at: since, created_at: since,
      });
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
      assert.deepEqual(page.data.map((r: { source: string }) => r.source), ['c', 'b']);
      assert.equal(page.has_more, true);
      const rest = await history(contact.id, `limit=2&after=${page.next_cursor}`);
      assert.deepEqual(rest.data.map((r: { source: string }) => r.source), ['a']);
      assert.equal(rest.has_more, false);
      const other = await create();
      const error = assertError(await server.request('GET', `/v1/contacts/${other.id}/consent?after=${page.next_cursor}`, { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/after', "another contact's record is not a cursor of this list");
    });
  });

  describe('concurrency', () => {
    it('concurrent consent records settle on the status of the latest recorded_at, whatever order they commit in', async () => {
      const contact = await create();
      const times = Array.from({ length: 12 }, (_, i) => ({ status: i % 2 === 0 ? 'opted_in' : 'opted_out', recorded_at: new Date(Date.UTC(2026, 4, 1, 9, i)).toISOString() }));
      const shuffled = [...times].sort(() => Math.random() - 0.5);
      const answers = await Promise.all(shuffled.map((body) => server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: owner.token, body: { ...body, source: 'import' } })));
      assert.ok(answers.every((answer) => answer.status === 200), answers.map((answer) => answer.text).join('\n'));
      const latest = times[times.length - 1]!;
      const stored = await server.request('GET', `/v1/contacts/${contact.id}`, { token: owner.token });
      assert.equal(stored.body.consent.marketing.status, latest.status);
      const records = await server.request('GET', `/v1/contacts/${contact.id}/consent?limit=100`, { token: owner.token });
      assert.equal(records.body.data.length, times.length);
    });

    it('concurrent creates of one number make one contact; the others are resource_exists', async () => {
      const phone = newNumber();
      const answers = await Promise.all(Array.from({ length: 8 }, () => server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: phone } })));
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
      assertError(await server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: owner.token, body: { status: 'opted_in', source: 'agent' } }), 404, 'resource_not_found');
      assertError(await server.request('GET', `/v1/contacts/${contact.id}/consent`, { token: owner.token }), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/contacts/${contact.id}`, { token: owner.token }), 404, 'resource_not_found');
      const list = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(contact.phone_number)}`, { token: owner.token });
      assert.deepEqual(list.body.data, []);
      assert.deepEqual(await auditActions(contact.id), ['contact.created', 'contact.deleted']);

      const row = await server.app.store.db.selectFrom('contacts').selectAll().where('id', '=', contact.id).executeTakeFirstOrThrow();
      assert.ok(row.deleted_at, 'the row stays for the messages that point at it');
      assert.deepEqual([row.name, row.email, row.metadata], [null, null, '{}'], 'what identified the person is erased');
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
      const optedOut = await server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: owner.token, body: { status: 'opted_out', source: 'keyword' } });
      await server.request('DELETE', `/v1/contacts/${contact.id}`, { token: owner.token });
      server.clock.advance(SECOND);
      const again = await create({ phone_number: contact.phone_number });
      assert.deepEqual(again.consent, optedOut.body.consent);
      const records = await server.request('GET', `/v1/contacts/${again.id}/consent`, { token: owner.token });
      assert.deepEqual(records.body.data.map((r: { status: string; source: string; recorded_at: string }) => [r.status, r.source, r.recorded_at]), [
        ['opted_out', 'keyword', optedOut.body.consent.marketing.since],
      ]);
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
          organizationId: owner.organizationId, connectionId: connection.id, waId: contact.phone_number.slice(1), profileName: 'Ada', at: server.clock.now(),
        }));
      assert.notEqual(found.id, contact.id);
      assert.equal(found.phone_number, contact.phone_number);
      assert.equal(found.profile_name, 'Ada');
      assert.equal(found.name, null);
      const created = await events(found.id);
      assert.deepEqual(created.map((event) => [event.type, event.connection_id]), [['contact.created', connection.id]]);
      assert.deepEqual((await server.request('GET', `/v1/contacts/${found.id}`, { token: owner.token })).body, found);
    });
  });

  describe('bad input', () => {
    for (const phone of ['07700900123', '447700900123', '+44 7700 900123', '+44-7700-900123', '+0447700900123', '+1234567890123456', '+12345', '']) {
      it(`a phone number not in E.164 (${JSON.stringify(phone)}) is validation_failed on /phone_number`, async () => {
        const error = assertError(await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: phone } }), 400, 'validation_failed');
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
      const error = assertError(await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: contact.phone_number, name: 'Twin' } }), 409, 'resource_exists');
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
      const error = assertError(await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: newNumber(), email: 'not-an-email' } }), 400, 'validation_failed');
      assert.equal(error.param, '/email');
      assert.equal(error.details[0].code, 'invalid_format');
    });

    it('metadata over 50 keys, or with a key over 40 characters, is refused', async () => {
      const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]));
      for (const metadata of [tooMany, { ['k'.repeat(41)]: 1 }]) {
        const error = assertError(await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: newNumber(), metadata } }), 400, 'validation_failed');
        assert.equal(error.param, '/metadata');
      }
      const contact = await create();
      const error = assertError(await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: owner.token, body: { metadata: tooMany } }), 400, 'validation_failed');
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
      assert.equal((await server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: agent.token, body: { status: 'opted_in', source: 'agent' } })).status, 200);
    });

    it('a key without contacts:read or contacts:write is refused with scope_missing', async () => {
      const contact = await create();
      const readOnly = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['contacts:read'] });
      const unrelated = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['messages:read'] });
      assert.equal((await server.request('GET', `/v1/contacts/${contact.id}`, { token: readOnly.key })).status, 200);
      const write = assertError(await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: readOnly.key, body: { name: 'x' } }), 403, 'scope_missing');
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
  before(async () => {
    server = await startServer();
    alpha = await signUp(server, { organizationName: 'Alpha' });
    beta = await signUp(server, { organizationName: 'Beta' });
  });
  after(() => server.close());

  it("another organization's contact is 404 everywhere, and its number is free in this one", async () => {
    const phone = newNumber();
    const theirs = (await server.request('POST', '/v1/contacts', { token: beta.token, body: { phone_number: phone, name: 'Beta customer' } })).body;
    const alphaKey = await createKey(server, alpha.token, { kind: 'organization', mode: 'live' });
    for (const token of [alpha.token, alphaKey.key]) {
      assertError(await server.request('GET', `/v1/contacts/${theirs.id}`, { token }), 404, 'resource_not_found');
      assertError(await server.request('PATCH', `/v1/contacts/${theirs.id}`, { token, body: { name: 'mine now' } }), 404, 'resource_not_found');
      assertError(await server.request('DELETE', `/v1/contacts/${theirs.id}`, { token }), 404, 'resource_not_found');
      assertError(await server.request('POST', `/v1/contacts/${theirs.id}/consent`, { token, body: { status: 'opted_out', source: 'agent' } }), 404, 'resource_not_found');
      assertError(await server.request('GET', `/v1/contacts/${theirs.id}/consent`, { token }), 404, 'resource_not_found');
      const cursor = assertError(await server.request('GET', `/v1/contacts?after=${theirs.id}`, { token }), 400, 'validation_failed');
      assert.equal(cursor.param, '/query/after');
      const byNumber = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(phone)}`, { token });
      assert.deepEqual(byNumber.body.data, []);
    }
    const mine = await server.request('POST', '/v1/contacts', { token: alpha.token, body: { phone_number: phone } });
    assert.equal(mine.status, 201, 'numbers are unique per organization only');
    const list = await server.request('GET', '/v1/contacts', { token: alpha.token });
    assert.deepEqual(list.body.data.map((c: { id: string }) => c.id), [mine.body.id]);
    // Nothing of Beta's changed.
    const still = await server.request('GET', `/v1/contacts/${theirs.id}`, { token: beta.token });
    assert.deepEqual(still.body, theirs);
    assert.deepEqual((await contactEvents(server, beta.organizationId, theirs.id)).map((event) => event.type), ['contact.created']);
  });
});

describe('contacts from inbound messages', () => {
  let server: TestServer;
  let owner: SignedUp;
  let connection: { id: string; phone_number_id: string };
  let receiver: Receiver;
  before(async () => {
    ({ server, owner } = await startServerWithOwner());
    connection = await createConnection(server, owner);
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    await server.close();
  });

  async function inbound(from: string, name: string) {
    const response = await server.request('POST', '/sandbox/control/inbound', { body: { phone_number_id: connection.phone_number_id, from, type: 'text', text: 'hi', name } });
    assert.equal(response.status, 200, response.text);
    await server.app.sandbox!.idle();
    await server.app.worker.drain();
    return server.app.store.db.selectFrom('messages').selectAll().where('provider_message_id', '=', response.body.message_id).executeTakeFirstOrThrow();
  }

  it('a message from a new number creates a contact the API shows; after a delete, the next message creates another', async () => {
    const phone = newNumber();
    const first = await inbound(phone.slice(1), 'Ada');
    const listed = await server.request('GET', `/v1/contacts?phone_number=${encodeURIComponent(phone)}`, { token: owner.token });
    assert.deepEqual(listed.body.data.map((c: { id: string; profile_name: string }) => [c.id, c.profile_name]), [[first.contact_id, 'Ada']]);
    assert.equal(listed.body.data[0].consent.marketing.status, 'unknown');

    await server.request('POST', `/v1/contacts/${first.contact_id}/consent`, { token: owner.token, body: { status: 'opted_out', source: 'keyword' } });
    assert.equal((await server.request('DELETE', `/v1/contacts/${first.contact_id}`, { token: owner.token })).status, 200);
    const second = await inbound(phone.slice(1), 'Ada');
    assert.notEqual(second.contact_id, first.contact_id);
    assert.notEqual(second.conversation_id, first.conversation_id, "the deleted contact's conversation stays with it");
    const contact = await server.request('GET', `/v1/contacts/${second.contact_id}`, { token: owner.token });
    assert.equal(contact.body.consent.marketing.status, 'opted_out', 'the opt-out outlives the deleted contact');
    const old = await server.app.store.db.selectFrom('messages').select('contact_id').where('id', '=', first.id).executeTakeFirstOrThrow();
    assert.equal(old.contact_id, first.contact_id, 'old messages keep their contact');
  });

  it('subscribed endpoints receive contact events, contact.updated with previous_attributes', async () => {
    const endpoint = await server.request('POST', '/v1/webhook-endpoints', {
      token: owner.token, body: { url: receiver.url, events: ['contact.created', 'contact.updated', 'contact.consent_changed'] },
    });
    assert.equal(endpoint.status, 201, endpoint.text);
    const contact = (await server.request('POST', '/v1/contacts', { token: owner.token, body: { phone_number: newNumber(), name: 'Ada' } })).body;
    await server.request('PATCH', `/v1/contacts/${contact.id}`, { token: owner.token, body: { email: 'ada@example.com' } });
    await server.request('POST', `/v1/contacts/${contact.id}/consent`, { token: owner.token, body: { status: 'opted_in', source: 'web_form' } });
    await server.app.worker.drain();
    const delivered = receiver.received.map((request) => JSON.parse(request.body) as { type: string; data: { object: { id: string } }; previous_attributes?: Record<string, unknown> });
    const ours = delivered.filter((event) => event.data.object.id === contact.id);
    assert.deepEqual(ours.map((event) => event.type).sort(), ['contact.consent_changed', 'contact.created', 'contact.updated']);
    const updated = ours.find((event) => event.type === 'contact.updated')!;
    assert.deepEqual(updated.previous_attributes, { email: null });
    assert.equal(ours.find((event) => event.type === 'contact.created')!.previous_attributes, undefined);
  });
});
