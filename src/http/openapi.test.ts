import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { startServer, suiteScope, type TestServer } from '../../test/harness.ts';

describe('the OpenAPI document', () => {
  let server: TestServer;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
  });

  it('is OpenAPI 3.1 and describes every API route with its scope', async () => {
    const response = await server.request('GET', '/v1/openapi.json');
    assert.equal(response.status, 200);
    const document = response.body;
    assert.equal(document.openapi, '3.1.0');
    const documented = new Set<string>();
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(operations)) documented.add(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`);
    }
    // Not API operations: the document itself, the error pages, and the dashboard's static files.
    const hidden = ['/v1/openapi.json', '/docs/errors', '/docs/errors/:code', '/dashboard', '/dashboard/*'];
    for (const row of server.app.accessTable) {
      if (hidden.includes(row.url)) continue;
      assert.ok(documented.has(`${row.method} ${row.url}`), `${row.method} ${row.url} is missing from the document`);
    }
    const create = document.paths['/v1/api-keys'].post;
    assert.equal(create['x-scope'], 'keys:write');
    assert.deepEqual(create.security, [{ bearer: [] }]);
    assert.equal(create.requestBody.content['application/json'].schema.additionalProperties, false);
    const idempotencyKey = create.parameters.find((p: { in: string; name: string }) => p.in === 'header' && p.name === 'idempotency-key');
    assert.ok(idempotencyKey, 'authenticated POSTs document the Idempotency-Key header');
    assert.equal(idempotencyKey.required, false);
  });
});
