import assert from 'node:assert/strict';
import { before, beforeEach, describe, it } from 'node:test';
import { HOUR, MINUTE } from '../../lib/clock.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { IDEMPOTENCY_RETENTION_MS } from './index.ts';

describe('purging expired idempotency keys', () => {
  let server: TestServer;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
  });
  beforeEach(async () => {
    await server.app.store.db.deleteFrom('idempotency_keys').execute();
  });

  const keys = async () => (await server.app.store.db.selectFrom('idempotency_keys').select('key').orderBy('key').execute()).map((row) => row.key);
  const use = async (key: string) => {
    const begun = await server.app.services.idempotencyKeys.begin(
      { organizationId: 'org_purge', mode: 'live' },
      key,
      {
        method: 'POST',
        route: '/v1/things',
        params: {},
        query: {},
        body: { key },
      },
      'own-commits',
    );
    assert.equal(begun.kind, 'execute');
    if (begun.kind === 'execute') await server.app.services.idempotencyKeys.finish(begun.claim, { status: 201, body: '{}', errorCode: undefined });
  };

  it('removes the keys past their 24 hours and only those', async () => {
    await use('first');
    server.clock.advance(12 * HOUR);
    await use('second');
    server.clock.advance(IDEMPOTENCY_RETENTION_MS - 12 * HOUR - MINUTE);
    assert.deepEqual(await server.app.services.idempotencyKeys.purgeExpired(), { deleted: 0, complete: true }, 'a minute before its 24 hours, a key stays');
    server.clock.advance(MINUTE);
    assert.deepEqual(await server.app.services.idempotencyKeys.purgeExpired(), { deleted: 1, complete: true });
    assert.deepEqual(await keys(), ['second']);
  });

  it('deletes in batches until none is left', async () => {
    for (let i = 0; i < 7; i++) await use(`key_${i}`);
    server.clock.advance(IDEMPOTENCY_RETENTION_MS);
    assert.deepEqual(await server.app.services.idempotencyKeys.purgeExpired({ batchSize: 3 }), { deleted: 7, complete: true });
    assert.deepEqual(await keys(), []);
  });

  it("is the worker's hourly idempotency_key.purge job", async () => {
    await use('old');
    server.clock.advance(IDEMPOTENCY_RETENTION_MS + HOUR);
    await use('fresh');
    await server.app.worker.drain();
    assert.deepEqual(await keys(), ['fresh']);
  });
});
