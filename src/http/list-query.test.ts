import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { MINUTE } from '../lib/clock.ts';
import { startServer, suiteScope, type TestServer } from '../../test/harness.ts';
import { assertError, createKey, signUp, type SignedUp } from '../../test/factories.ts';

/** Lists behave the same everywhere; API keys are the list under test because they are cheap to make. */
describe('lists: cursor paging, time ranges and order', () => {
  let server: TestServer;
  let owner: SignedUp;
  const ids: string[] = [];
  let midpoint = '';
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
    for (let i = 0; i < 7; i++) {
      if (i === 4) {
        midpoint = server.clock.now().toISOString();
        server.clock.advance(MINUTE);
      }
      ids.push((await createKey(server, owner.token, { kind: 'organization', mode: 'live', name: `key ${i}` })).id);
      server.clock.advance(1000);
    }
  });

  const page = async (query: string) => {
    const response = await server.request('GET', `/v1/api-keys?${query}`, { token: owner.token });
    assert.equal(response.status, 200, response.text);
    return response.body as { object: string; data: { id: string }[]; has_more: boolean; next_cursor: string | null };
  };
  const newestFirst = () => [...ids].reverse();

  it('the default is 25 items, newest first, with the list envelope', async () => {
    const list = await page('');
    assert.equal(list.object, 'list');
    assert.deepEqual(
      list.data.map((k) => k.id),
      newestFirst(),
    );
    assert.equal(list.has_more, false);
    assert.equal(list.next_cursor, null);
  });

  it('walking forward with after visits every item once', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const list = await page(`limit=3${cursor ? `&after=${cursor}` : ''}`);
      seen.push(...list.data.map((k) => k.id));
      assert.equal(list.next_cursor, list.has_more ? list.data.at(-1)!.id : null);
      cursor = list.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, newestFirst());
  });

  it('walking backward with before returns the preceding items, still in list order', async () => {
    const newest = newestFirst();
    const list = await page(`limit=2&before=${newest[4]}`);
    assert.deepEqual(
      list.data.map((k) => k.id),
      [newest[2], newest[3]],
    );
    assert.equal(list.has_more, true);
    assert.equal(list.next_cursor, newest[2]);
    const first = await page(`limit=2&before=${newest[2]}`);
    assert.deepEqual(
      first.data.map((k) => k.id),
      [newest[0], newest[1]],
    );
    assert.equal(first.has_more, false);
  });

  it('order=asc lists oldest first and pages the same way', async () => {
    const list = await page('order=asc&limit=4');
    assert.deepEqual(
      list.data.map((k) => k.id),
      ids.slice(0, 4),
    );
    const rest = await page(`order=asc&after=${list.next_cursor}`);
    assert.deepEqual(
      rest.data.map((k) => k.id),
      ids.slice(4),
    );
  });

  it('created_after and created_before bound the list by creation time', async () => {
    assert.deepEqual(
      (await page(`order=asc&created_after=${midpoint}`)).data.map((k) => k.id),
      ids.slice(4),
    );
    assert.deepEqual(
      (await page(`order=asc&created_before=${midpoint}`)).data.map((k) => k.id),
      ids.slice(0, 4),
    );
  });

  describe('bad input', () => {
    for (const limit of ['0', '101', '-1', 'abc', '2.5', '1e309', '-1e309', 'Infinity']) {
      it(`limit=${limit} is validation_failed on /query/limit`, async () => {
        const error = assertError(await server.request('GET', `/v1/api-keys?limit=${limit}`, { token: owner.token }), 400, 'validation_failed');
        assert.equal(error.param, '/query/limit');
      });
    }

    it('after and before together are refused', async () => {
      const error = assertError(await server.request('GET', `/v1/api-keys?after=${ids[1]}&before=${ids[3]}`, { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/before');
    });

    it('a cursor of another resource is refused, not answered with an empty page', async () => {
      const error = assertError(await server.request('GET', `/v1/api-keys?after=${owner.memberId}`, { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/after');
    });

    it("a cursor of another organization's list is refused", async () => {
      const stranger = await signUp(server);
      const theirs = await createKey(server, stranger.token, { kind: 'organization', mode: 'live' });
      const error = assertError(await server.request('GET', `/v1/api-keys?before=${theirs.id}`, { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/before');
    });

    it('a garbage cursor is refused', async () => {
      assertError(await server.request('GET', `/v1/api-keys?after=${encodeURIComponent("' or 1=1 --")}`, { token: owner.token }), 400, 'validation_failed');
    });

    it('created_after later than created_before is refused', async () => {
      const error = assertError(
        await server.request('GET', '/v1/api-keys?created_after=2026-06-02T00:00:00Z&created_before=2026-06-01T00:00:00Z', { token: owner.token }),
        400,
        'validation_failed',
      );
      assert.equal(error.param, '/query/created_before');
    });

    it('a created_after that is not a timestamp is refused', async () => {
      const error = assertError(await server.request('GET', '/v1/api-keys?created_after=yesterday', { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/created_after');
    });

    it('an unknown order is refused', async () => {
      const error = assertError(await server.request('GET', '/v1/api-keys?order=random', { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/order');
    });
  });
});

describe('the members and events lists', () => {
  let server: TestServer;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
  });

  it('members lists the organization’s people, filtered by role', async () => {
    const owner = await signUp(server);
    const members = await server.request('GET', '/v1/members', { token: owner.token });
    assert.deepEqual(
      members.body.data.map((m: { id: string }) => m.id),
      [owner.memberId],
    );
    assert.equal((await server.request('GET', '/v1/members?role=viewer', { token: owner.token })).body.data.length, 0);
    const one = await server.request('GET', `/v1/members/${owner.memberId}`, { token: owner.token });
    assert.equal(one.body.email, owner.email);
  });

  it('sign-up writes the organization and its owner into the audit log, newest first', async () => {
    const owner = await signUp(server);
    const events = await server.request('GET', '/v1/events', { token: owner.token });
    assert.deepEqual(
      events.body.data.map((e: { action: string }) => e.action),
      ['member.created', 'organization.created'],
    );
    const event = events.body.data[1];
    assert.equal(event.object, 'audit_event');
    assert.equal(event.target.id, owner.organizationId);
    assert.match(event.request_id, /^req_/);
    const one = await server.request('GET', `/v1/events/${event.id}`, { token: owner.token });
    assert.deepEqual(one.body, event);
  });
});
