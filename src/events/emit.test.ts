import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Db } from '../db/connect.ts';
import type { Queue } from '../jobs/queue.ts';
import { mailSend } from '../jobs/catalog.ts';
import { suiteScope, type TestServer } from '../../test/harness.ts';
import { assertError, createKey, startServerWithOwner, type SignedUp } from '../../test/factories.ts';
import type { EventEnvelope } from './envelope.ts';

describe('in-process subscribers to the event stream', () => {
  let server: TestServer;
  let owner: SignedUp;
  let key: string;
  const suite = suiteScope();
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    key = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
  });

  const createContact = (phoneNumber: string) =>
    server.request('POST', '/v1/contacts', { token: key, body: { phone_number: phoneNumber }, headers: { 'idempotency-key': `contact-${phoneNumber}` } });
  const storedContacts = (phoneNumber: string) => server.app.store.db.selectFrom('contacts').select('id').where('phone_number', '=', phoneNumber).execute();
  const storedJobs = async () => (await server.app.store.db.selectFrom('jobs').select('id').execute()).length;
  const storedEvents = (type: string) =>
    server.app.store.db.selectFrom('events').select('id').where('organization_id', '=', owner.organizationId).where('type', '=', type).execute();

  it('a subscriber runs inside the transaction that emitted the event, and sees the change it announces', async () => {
    const seen: { event: EventEnvelope; stored: number }[] = [];
    server.app.services.events.subscribe(['contact.created'], async (trx, event) => {
      const rows = await trx
        .selectFrom('contacts')
        .select('id')
        .where('id', '=', (event.data.object as { id: string }).id)
        .execute();
      seen.push({ event, stored: rows.length });
    });
    const response = await createContact('+447700900301');
    assert.equal(response.status, 201, response.text);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.event.type, 'contact.created');
    assert.equal((seen[0]!.event.data.object as { id: string }).id, response.body.id);
    assert.equal(seen[0]!.stored, 1, 'the subscriber reads the uncommitted contact through the transaction');
  });

  it("a subscriber's failure rolls back the change that emitted it: no contact, no event, no delivery", async () => {
    server.app.services.events.subscribe(['contact.created'], async (_trx, event) => {
      if ((event.data.object as { phone_number: string }).phone_number === '+447700900302') throw new Error('the meter is broken');
    });
    const eventsBefore = (await storedEvents('contact.created')).length;
    const jobsBefore = await storedJobs();
    const response = await createContact('+447700900302');
    assertError(response, 500, 'internal_error');
    assert.deepEqual(await storedContacts('+447700900302'), []);
    assert.equal((await storedEvents('contact.created')).length, eventsBefore);
    assert.equal(await storedJobs(), jobsBefore, 'nothing was queued by the rolled-back change');
  });

  it('work a subscriber queues commits with the change, and a subscriber to other types is never called', async () => {
    let called = 0;
    server.app.services.events.subscribe(['message.received'], async () => void called++);
    server.app.services.events.subscribe(['contact.created'], async (trx, event) => {
      await server.app.services.queue.enqueue(trx, mailSend, { mail_id: `mail_for_${event.id}` });
    });
    const response = await createContact('+447700900303');
    assert.equal(response.status, 201, response.text);
    const jobs = await server.app.store.db.selectFrom('jobs').select('payload').where('name', '=', mailSend.name).execute();
    assert.equal(jobs.filter((job) => job.payload.includes('mail_for_evt_')).length, 1);
    assert.equal(called, 0);
  });

  it('the type checker refuses the root handle where a transaction is required', () => {
    // Never called: `npm run typecheck` fails if enqueueing on the root handle ever compiles again.
    const outsideATransaction = (db: Db, queue: Queue) =>
      // @ts-expect-error a Db is not a Trx: a job must be written with the change that causes it
      queue.enqueue(db, mailSend, { mail_id: 'mail_1' });
    assert.equal(typeof outsideATransaction, 'function');
  });
});
