import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { SESSION_CACHE_TTL_MS } from '../auth/auth.service.ts';
import { startServer } from '../../../test/harness.ts';
import { assertError, signUp } from '../../../test/factories.ts';

describe('health, readiness and unavailability', () => {
  it('/healthz answers while the process is up; /readyz while the store is migrated', async (t) => {
    const server = await startServer(t);
    assert.deepEqual((await server.request('GET', '/healthz')).body, { status: 'ok' });
    assert.deepEqual((await server.request('GET', '/readyz')).body, { status: 'ready' });
    await sql`delete from kysely_migration`.execute(server.app.store.db);
    const response = await server.request('GET', '/readyz');
    assertError(response, 503, 'service_unavailable');
    assert.ok(Number(response.headers.get('retry-after')) > 0);
  });

  it('a store that cannot be reached is a 503 with Retry-After, not a 500', async (t) => {
    const server = await startServer(t);
    const account = await signUp(server);
    // A second server on the same store whose connection is then closed: its store is gone.
    const orphan = await startServer(t, { shareStore: server.testStore });
    assert.equal((await orphan.request('GET', '/v1/identity', { token: account.token })).status, 200);
    await orphan.app.store.close();
    // The session, member and organization are remembered for a second: past it, the request needs the store.
    orphan.clock.advance(SESSION_CACHE_TTL_MS);
    const response = await orphan.request('GET', '/v1/identity', { token: account.token });
    assertError(response, 503, 'service_unavailable');
    assert.ok(Number(response.headers.get('retry-after')) > 0);
    assertError(await orphan.request('GET', '/readyz'), 503, 'service_unavailable');
  });
});
