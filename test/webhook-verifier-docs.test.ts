import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { signatureHeader, verifyWebhookSignature } from '../src/events/webhook-signature.ts';

/** The "Without any library" block of docs/webhooks.md, as a receiver would paste it. */
function documentedVerifierSource(): string {
  const guide = readFileSync(new URL('../docs/webhooks.md', import.meta.url), 'utf8');
  const section = guide.slice(guide.indexOf('### Without any library'));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(block, 'docs/webhooks.md has the no-library verifier in a ts block');
  return block[1]!;
}

describe('the verifier the docs give for receivers without a library', () => {
  let directory: string;
  let isValidDelivery: (rawBody: Buffer, header: string | undefined, secrets: string[]) => boolean;
  before(async () => {
    directory = mkdtempSync(path.join(tmpdir(), 'docs-verifier-'));
    const file = path.join(directory, 'verifier.ts');
    writeFileSync(file, documentedVerifierSource());
    ({ isValidDelivery } = (await import(pathToFileURL(file).href)) as { isValidDelivery: typeof isValidDelivery });
  });
  after(() => rmSync(directory, { recursive: true, force: true }));

  it('answers as the package does, for good, malformed and hostile headers alike', () => {
    const body = Buffer.from('{"id":"evt_1","type":"ping","data":{"text":"héllo"}}');
    const secret = 'whsec_current';
    const previous = 'whsec_previous';
    const now = Math.floor(Date.now() / 1000);
    const good = signatureHeader(body, [secret], now);
    const [, v1] = good.split(',');
    const headers: (string | undefined)[] = [
      good,
      signatureHeader(body, [previous, secret], now),
      signatureHeader(body, [secret], now - 299),
      signatureHeader(body, [secret], now - 400),
      signatureHeader(body, [secret], now + 400),
      signatureHeader(body, ['whsec_other'], now),
      undefined,
      '',
      '   ',
      `${good},`,
      `,${good}`,
      `${good},,`,
      ` t = ${now} , ${v1} `,
      `t=${now},garbage,${v1}`,
      `t=${now},=x,${v1}`,
      `t=${now},${v1},v2=abc`,
      `t=${now},t=${now},${v1}`,
      `t=,${v1}`,
      `t=abc,${v1}`,
      `t=-${now},${v1}`,
      `t=${now}.5,${v1}`,
      `t=0000${now},${v1}`,
      `t=1234567890123,${v1}`,
      `t=${now}`,
      `${v1}`,
      `t=${now},v1=${'a'.repeat(64)}`,
      `t=${now},v1=${v1!.slice(3).toUpperCase()}`,
      `t=${now},v1=${v1!.slice(3, -2)}`,
      `t=${now},v1=${v1!.slice(3)}00`,
      `t=${now},v1=${'g'.repeat(64)}`,
      `t=${now},v1=`,
      `t=${now},v1=${'a'.repeat(64)},${v1}`,
    ];
    for (const header of headers) {
      for (const secrets of [[secret], [previous], [secret, previous], [''], []]) {
        const expected = verifyWebhookSignature(body, header, secrets).valid;
        assert.equal(isValidDelivery(body, header, secrets), expected, `${JSON.stringify(header)} with ${JSON.stringify(secrets)}`);
      }
    }
    assert.equal(isValidDelivery(body, good, [secret]), true, 'the corpus holds a valid header');
  });
});
