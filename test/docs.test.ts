import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { renderAll, renderErrorsReference } from '../scripts/docs-content.ts';
import { ERROR_CODES, ERROR_TYPES, type ErrorCode } from '../src/lib/errors.ts';
import { assertError } from './factories.ts';
import { startServer, suiteScope, type TestServer } from './harness.ts';

const root = new URL('..', import.meta.url);
const codes = Object.keys(ERROR_CODES) as ErrorCode[];

describe('docs: the reference pages say what the code does', () => {
  describe('committed docs', () => {
    it('every committed reference page equals what `npm run docs` generates from the code', async () => {
      for (const doc of await renderAll()) {
        let committed: string | undefined;
        try {
          committed = readFileSync(new URL(doc.path, root), 'utf8');
        } catch {
          committed = undefined;
        }
        assert.ok(committed !== undefined, `${doc.path} is missing: run \`npm run docs\` and commit the result.`);
        assert.ok(committed === doc.content, `${doc.path} no longer matches the code: run \`npm run docs\` and commit the result.`);
      }
    });

    it('the README configuration table lists every variable that config.ts reads', () => {
      const source = readFileSync(new URL('src/config/config.ts', root), 'utf8');
      const variables = [...new Set([...source.matchAll(/\(env, '([A-Z0-9_]+)'/g)].map((match) => match[1]!))];
      assert.ok(variables.length > 0, 'found the variables in src/config/config.ts');
      const readme = readFileSync(new URL('README.md', root), 'utf8');
      const missing = variables.filter((name) => !readme.includes(`| \`${name}\` |`));
      assert.deepEqual(missing, [], `add ${missing.join(', ')} to the configuration table of README.md`);
    });

    it('the errors page lists the nine types and every one of the 47 codes', () => {
      assert.equal(Object.keys(ERROR_TYPES).length, 9);
      assert.equal(codes.length, 47);
      const page = renderErrorsReference();
      for (const type of Object.keys(ERROR_TYPES)) assert.ok(page.includes(`\`${type}\``), `${type} is on the page`);
      for (const code of codes) assert.ok(page.includes(`### \`${code}\``), `${code} has its own entry`);
    });
  });

  describe('the served reference entries', () => {
    let server: TestServer;
    const suite = suiteScope();
    before(async () => {
      server = await startServer(suite);
    });

    it('every error code has an HTML reference page at its doc_url path', async () => {
      for (const code of codes) {
        const response = await server.request('GET', `/docs/errors/${code}`);
        assert.equal(response.status, 200, `/docs/errors/${code}: ${response.text}`);
        assert.match(response.headers.get('content-type') ?? '', /^text\/html/, code);
        assert.ok(response.text.includes(code), `the page of ${code} names it`);
        assert.ok(response.text.includes(String(ERROR_CODES[code].status)), `the page of ${code} gives its status`);
      }
    });

    it('asking for JSON returns the catalogue entry of each code', async () => {
      for (const code of codes) {
        const response = await server.request('GET', `/docs/errors/${code}`, { headers: { accept: 'application/json' } });
        assert.equal(response.status, 200, response.text);
        const definition = ERROR_CODES[code];
        assert.deepEqual(response.body, { code, ...definition, type_description: ERROR_TYPES[definition.type] });
      }
    });

    it('an unknown code answers 404 in the error envelope', async () => {
      const error = assertError(await server.request('GET', '/docs/errors/no_such_code'), 404, 'resource_not_found');
      assert.equal(error.param, '/path/code');
    });
  });
});
