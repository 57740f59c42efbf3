/**
 * The client package as its users get it: its generated files are what the served OpenAPI document
 * generates now (so the client cannot drift from the server), and its tarball installs and runs, as
 * plain JavaScript on the machine's Node and as declarations a TypeScript project compiles against.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describeOperations, renderClientFiles, type OpenApiDocument } from '../scripts/client-content.ts';
import { OPERATIONS, RESOURCES } from '../packages/client/src/generated/operations.ts';
import { signatureHeader } from '../src/events/webhook-signature.ts';
import { createConnection, createKey, inbound, newCustomer, startServerWithOwner, type SignedUp } from './factories.ts';
import { suiteScope, type TestServer } from './harness.ts';
import { systemNode } from './system-node.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const packageDir = path.join(root, 'packages/client');
const run = promisify(execFile);

function leaves(tree: object): string[] {
  return Object.values(tree).flatMap((value: unknown) => (typeof value === 'string' ? [value] : leaves(value as object)));
}

describe('the client package', () => {
  const suite = suiteScope();
  let server: TestServer;
  let owner: SignedUp;
  let served: OpenApiDocument;
  before(async () => {
    ({ server, owner } = await startServerWithOwner(suite));
    served = (await server.request('GET', '/v1/openapi.json')).body;
  });

  describe('generated from the served document', () => {
    it('every committed generated file equals what `npm run client:generate` makes from GET /v1/openapi.json now', async () => {
      for (const file of await renderClientFiles(served)) {
        const committed = readFileSync(path.join(root, file.path), 'utf8');
        assert.ok(committed === file.content, `${file.path} no longer matches the served document: run \`npm run client:generate\` and commit the result.`);
      }
    });

    it('names every /v1 operation of the document exactly once', () => {
      const documented = Object.entries(served.paths)
        .filter(([url]) => url.startsWith('/v1/'))
        .flatMap(([url, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${url}`))
        .sort();
      assert.deepEqual(Object.keys(OPERATIONS).sort(), documented);
      const named = leaves(RESOURCES).sort();
      assert.deepEqual(named, documented);
      assert.equal(new Set(named).size, named.length);
    });

    it('a side-effecting POST takes an Idempotency-Key; a preview and a public POST do not; lists know their cursors', () => {
      const { operations } = describeOperations(served);
      assert.equal(operations['POST /v1/messages']!.idempotencyKey, true);
      assert.equal(operations['POST /v1/schedules/preview']!.idempotencyKey, false, 'a preview only reads');
      assert.equal(operations['POST /v1/schedules/preview']!.retry, true);
      assert.equal(operations['POST /v1/invites/accept']!.idempotencyKey, false, 'public: the server ignores the header');
      assert.equal(operations['POST /v1/invites/accept']!.retry, false, 'so a lost answer cannot be retried safely');
      assert.deepEqual(operations['GET /v1/conversations']!.list, { after: 'after', before: 'before' });
      assert.deepEqual(operations['GET /v1/runs/{id}/events']!.list, { after: 'after_seq', before: null });
      assert.equal(operations['GET /v1/media/{id}/download']!.response, 'raw');
      assert.equal(operations['POST /v1/media']!.input, 'multipart');
    });
  });

  describe('its tarball', () => {
    let work: string;
    let app: string;
    const suiteDir = suiteScope();
    before(() => {
      work = mkdtempSync(path.join(tmpdir(), 'client-package-'));
      suiteDir.after(() => rmSync(work, { recursive: true, force: true }));
      // `npm pack` builds it first (prepack), as it would for anyone making the tarball.
      execFileSync('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: packageDir, stdio: ['ignore', 'ignore', 'inherit'] });
      const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'));
      assert.ok(tarball, 'npm pack wrote a tarball');
      app = path.join(work, 'app');
      mkdirSync(app);
      writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
      execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', path.join(work, tarball)], {
        cwd: app,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    });

    it('ships plain JavaScript and declarations only, the service’s signature code among them', () => {
      const shipped = readdirSync(path.join(app, 'node_modules/@messaging-service/client/dist'), { recursive: true }).map(String);
      assert.deepEqual(
        shipped.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts')),
        [],
      );
      assert.ok(shipped.includes('webhook-signature.js'));
      assert.ok(shipped.includes('index.d.ts'));
      const packageJson = JSON.parse(readFileSync(path.join(app, 'node_modules/@messaging-service/client/package.json'), 'utf8'));
      assert.equal(packageJson.dependencies, undefined, 'no runtime dependency');
    });

    it('sends, pages and verifies on the machine’s Node, against the real server', async () => {
      const own = await createConnection(server, owner, { test: true });
      const key = (await createKey(server, owner.token, { kind: 'organization', mode: 'test' })).key;
      const from = newCustomer();
      await inbound(server, own, { from });
      const body = '{"id":"evt_1","object":"event","type":"ping"}';
      const header = signatureHeader(body, ['whsec_package'], Math.floor(Date.now() / 1000));
      const script = `
        import { createClient, ApiError } from '@messaging-service/client';
        import { verifyWebhook } from '@messaging-service/client/webhooks';
        const [baseUrl, apiKey, connectionId, to, body, header] = process.argv.slice(-6);
        const client = createClient({ baseUrl, apiKey });
        const sent = await client.messages.create({ connection_id: connectionId, to, type: 'text', text: { body: 'from the package' } });
        const listed = [];
        for await (const message of client.messages.list({ limit: 1, conversation_id: sent.conversation_id })) listed.push(message.id);
        let code;
        try { await client.messages.retrieve('msg_nope'); } catch (error) { code = error instanceof ApiError ? error.code : String(error); }
        console.log(JSON.stringify({ node: process.version, mode: client.mode, sent: sent.id, listed, code, event: verifyWebhook(body, header, ['whsec_package']).type }));
      `;
      const { stdout } = await run(systemNode(), ['--input-type=module', '-e', script, '--', server.url, key, own.id, `+${from}`, body, header], { cwd: app });
      const result = JSON.parse(stdout);
      assert.equal(result.mode, 'test');
      assert.equal(result.listed.length, 2, 'the customer’s message and ours, one page each');
      assert.equal(result.listed[0], result.sent);
      assert.equal(result.code, 'validation_failed');
      assert.equal(result.event, 'ping');
    });

    it('its declarations type-check a TypeScript project that uses it', () => {
      writeFileSync(
        path.join(app, 'main.ts'),
        `import { createClient, type Message } from '@messaging-service/client';
         import { verifyWebhook } from '@messaging-service/client/webhooks';
         const client = createClient({ baseUrl: 'https://api.example.com', apiKey: 'cok_test_x' });
         export async function send(): Promise<Message> {
           return client.messages.create({ to: '+447700900000', type: 'text', text: { body: 'hi' } });
         }
         export function receive(raw: string, header: string) {
           const event = verifyWebhook(raw, header, ['whsec_a', 'whsec_b']);
           if (event.type === 'message.received') return event.data.object.direction;
           return undefined;
         }
         // @ts-expect-error: not an operation of the API
         void client.request('GET /v1/nothing');
        `,
      );
      const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
      const options = [
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--target',
        'es2022',
        '--lib',
        'es2022,dom',
        '--types',
        'node',
        '--typeRoots',
        path.join(root, 'node_modules/@types'),
      ];
      execFileSync(process.execPath, [tsc, 'main.ts', '--ignoreConfig', ...options], { cwd: app, stdio: 'inherit' });
    });
  });
});
