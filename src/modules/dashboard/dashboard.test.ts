/**
 * How the service serves the built dashboard: the app's page for every route (a deep link reloads),
 * hashed assets cached forever and compressed, a missing asset a 404 envelope (never the page), no
 * framing, and a 503 envelope while nothing is built. The browser tests (test/browser/) cover the app.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { startServer, suiteScope } from '../../../test/harness.ts';
import { assertError } from '../../../test/factories.ts';

describe('the dashboard’s files', () => {
  const scope = suiteScope();
  // `npm test` builds web/dist first (scripts/build-dashboard.ts --required).
  const server = startServer(scope);
  const script = readdirSync(path.resolve(import.meta.dirname, '../../../web/dist/assets')).find((name) => name.endsWith('.js'))!;

  it('answers the app’s page, never cached, for the root and any route under it', async () => {
    for (const route of [
      '/dashboard',
      '/dashboard/',
      '/dashboard/inbox',
      '/dashboard/inbox/cnv_01J00000000000000000000000?state=open',
      '/dashboard/connections',
    ]) {
      const response = await (await server).request('GET', route);
      assert.equal(response.status, 200, route);
      assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(response.headers.get('cache-control'), 'no-cache');
      assert.match(response.text, /<div id="root"><\/div>/);
      assert.match(response.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
      assert.equal(response.headers.get('x-frame-options'), 'DENY');
    }
  });

  it('serves hashed assets immutable, compressed when the browser accepts it', async () => {
    const plain = await (await server).request('GET', `/dashboard/assets/${script}`);
    assert.equal(plain.status, 200);
    assert.match(plain.headers.get('content-type') ?? '', /javascript/);
    assert.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const compressed = await fetch(`${(await server).url}/dashboard/assets/${script}`, { headers: { 'accept-encoding': 'br' } });
    assert.equal(compressed.headers.get('content-encoding'), 'br');
    assert.equal(await compressed.text(), plain.text, 'the same bytes once decoded');
  });

  it('answers a missing asset, or a path out of the folder, with the 404 envelope rather than the page', async () => {
    for (const asset of [
      '/dashboard/assets/index-00000000.js',
      '/dashboard/assets/..%2f..%2fpackage.json',
      '/dashboard/assets/',
      '/dashboard/assets/nested/missing.css',
    ]) {
      const error = assertError(await (await server).request('GET', asset), 404, 'route_not_found');
      assert.match(error.message, /reload the page/, asset);
    }
  });

  it('answers 503 with the error envelope while the dashboard is not built, and the API works', async (t) => {
    const empty = await startServer(t, { env: { DASHBOARD_DIR: mkdtempSync(path.join(tmpdir(), 'no-dashboard-')) } });
    for (const route of ['/dashboard', '/dashboard/inbox', `/dashboard/assets/${script}`]) {
      const error = assertError(await empty.request('GET', route), 503, 'service_unavailable');
      assert.match(error.message, /not built/);
    }
    assert.equal((await empty.request('GET', '/healthz')).status, 200);
  });
});
