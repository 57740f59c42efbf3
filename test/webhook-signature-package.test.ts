import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { signatureHeader } from '../src/events/webhook-signature.ts';
import { systemNode } from './system-node.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const packageDir = path.join(root, 'packages/webhook-signature');

const BODY = '{"id":"evt_1","type":"ping","created_at":"2026-06-01T12:00:00.000Z"}';
const SECRET = 'whsec_receiver';

/** Run by each Node in the receiver's folder: the package by name, as ES module and as CommonJS. */
const CHECK = `
const body = ${JSON.stringify(BODY)};
const [header, secret] = process.argv.slice(-2);
const esm = await import('@messaging-service/webhook-signature');
const { createRequire } = await import('node:module');
const cjs = createRequire(process.cwd() + '/')('@messaging-service/webhook-signature');
console.log(JSON.stringify({
  node: process.version,
  esm: esm.verifyWebhookSignature(body, header, [secret]),
  cjs: cjs.verifyWebhookSignature(body, header, [secret]),
  wrong: esm.verifyWebhookSignature(body, header, ['whsec_other']).reason,
  header: esm.SIGNATURE_HEADER,
}));
`;

describe('the webhook-signature package receivers depend on', () => {
  let work: string;
  let receiver: string;
  before(() => {
    work = mkdtempSync(path.join(tmpdir(), 'signature-package-'));
    // `npm pack` builds it first (prepack), as it would for anyone making the tarball.
    execFileSync('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: packageDir, stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote a tarball');
    receiver = path.join(work, 'receiver');
    mkdirSync(receiver);
    writeFileSync(path.join(receiver, 'package.json'), JSON.stringify({ name: 'receiver', private: true, type: 'module' }));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', path.join(work, tarball)], {
      cwd: receiver,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  for (const [name, node] of [
    ['the machine’s Node', () => systemNode()],
    ['the project’s Node', () => process.execPath],
  ] as const) {
    it(`installs from its tarball and verifies the service's signature as ES module and CommonJS on ${name}`, () => {
      const header = signatureHeader(BODY, [SECRET], Math.floor(Date.now() / 1000));
      const output = execFileSync(node(), ['--input-type=module', '-e', CHECK, '--', header, SECRET], { cwd: receiver, encoding: 'utf8' });
      const result = JSON.parse(output) as { node: string; esm: { valid: boolean }; cjs: { valid: boolean }; wrong: string; header: string };
      assert.equal(result.esm.valid, true, output);
      assert.equal(result.cjs.valid, true, output);
      assert.equal(result.wrong, 'no_matching_signature');
      assert.equal(result.header, 'service-signature');
    });
  }

  it('ships plain JavaScript and declarations only, never the TypeScript source', () => {
    const shipped = readdirSync(path.join(receiver, 'node_modules/@messaging-service/webhook-signature/dist')).sort();
    assert.deepEqual(shipped, ['webhook-signature.cjs', 'webhook-signature.d.cts', 'webhook-signature.d.ts', 'webhook-signature.js']);
  });
});
