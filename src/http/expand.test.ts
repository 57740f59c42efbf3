import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { startServer, suiteScope, type TestServer } from '../../test/harness.ts';
import { assertError, createConnection, createKey, signUp, type SignedUp } from '../../test/factories.ts';

describe('expand', () => {
  let server: TestServer;
  let owner: SignedUp;
  let queries = 0;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite, { onQuery: () => queries++ });
    owner = await signUp(server);
    for (let i = 0; i < 6; i++) {
      const connection = await createConnection(server, owner);
      await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
    }
    await createKey(server, owner.token, { kind: 'organization', mode: 'live' });
  });

  const queriesFor = async (path: string) => {
    queries = 0;
    const response = await server.request('GET', path, { token: owner.token });
    assert.equal(response.status, 200, response.text);
    return { count: queries, body: response.body };
  };

  it('embeds the relation beside its id, and null where there is none', async () => {
    const { body } = await queriesFor('/v1/api-keys?expand=connection');
    for (const key of body.data) {
      if (key.kind === 'connection') {
        assert.equal(key.connection.id, key.connection_id);
        assert.equal(key.connection.object, 'connection');
      } else {
        assert.equal(key.connection, null);
      }
    }
    const plain = await queriesFor('/v1/api-keys');
    assert.ok(plain.body.data.every((key: object) => !('connection' in key)));
  });

  it('costs one query per relation per page, whatever the page size', async () => {
    const small = await queriesFor('/v1/api-keys?limit=2&expand=connection');
    const large = await queriesFor('/v1/api-keys?limit=7&expand=connection');
    const none = await queriesFor('/v1/api-keys?limit=7');
    assert.equal(small.body.data.length, 2);
    assert.equal(large.body.data.length, 7);
    assert.equal(large.count, small.count);
    assert.equal(large.count, none.count + 1);
  });

  it('ignores blanks and repeats: "connection,,connection" is one relation', async () => {
    const { count } = await queriesFor('/v1/api-keys?expand=connection,,connection');
    const single = await queriesFor('/v1/api-keys?expand=connection');
    assert.equal(count, single.count);
  });

  describe('bad input', () => {
    it('an unknown relation is validation_failed on /query/expand, naming the valid ones', async () => {
      const error = assertError(await server.request('GET', '/v1/api-keys?expand=organization', { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/expand');
      assert.match(error.message, /connection/);
    });

    it('a nested relation is refused', async () => {
      const error = assertError(await server.request('GET', '/v1/api-keys?expand=connection.organization', { token: owner.token }), 400, 'validation_failed');
      assert.equal(error.param, '/query/expand');
    });

    it('more than four relations are refused', async () => {
      assertError(await server.request('GET', '/v1/api-keys?expand=a,b,c,d,e', { token: owner.token }), 400, 'validation_failed');
    });
  });
});
