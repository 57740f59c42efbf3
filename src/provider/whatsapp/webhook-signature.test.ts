import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { verifyProviderSignature } from './webhook-signature.ts';

/** How the provider serialises webhooks before signing them (facts §4): non-ASCII as lowercase \uXXXX. */
function escapeNonAscii(json: string): string {
  return json.replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const SECRET = 'app-secret';
const body = Buffer.from(
  escapeNonAscii(JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: '1', changes: [{ field: 'messages', value: { text: 'Olá 👋' } }] }] })),
);
const hex = createHmac('sha256', SECRET).update(body).digest('hex');

describe('verifying the provider webhook signature', () => {
  it("the provider's signature over the escaped bytes verifies", () => {
    assert.match(body.toString('utf8'), /\\u00e1/);
    assert.equal(verifyProviderSignature(body, `sha256=${hex}`, SECRET), true);
  });

  it('upper-case hex, an upper-case prefix and surrounding blanks are tolerated', () => {
    assert.equal(verifyProviderSignature(body, `sha256=${hex.toUpperCase()}`, SECRET), true);
    assert.equal(verifyProviderSignature(body, `SHA256=${hex}`, SECRET), true);
    assert.equal(verifyProviderSignature(body, `  sha256=${hex} `, SECRET), true);
  });

  it('a body parsed and serialised again (non-ASCII no longer escaped) does not verify', () => {
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8'))));
    assert.notDeepEqual(reserialised, body);
    assert.equal(verifyProviderSignature(reserialised, `sha256=${hex}`, SECRET), false);
  });

  it('a wrong secret, a changed body or a changed digit is refused', () => {
    assert.equal(verifyProviderSignature(body, `sha256=${hex}`, 'other-secret'), false);
    assert.equal(verifyProviderSignature(Buffer.concat([body, Buffer.from(' ')]), `sha256=${hex}`, SECRET), false);
    const flipped = `${hex.slice(0, -1)}${hex.endsWith('0') ? '1' : '0'}`;
    assert.equal(verifyProviderSignature(body, `sha256=${flipped}`, SECRET), false);
  });

  it('a missing, empty, legacy sha1, truncated or non-hex header is refused without throwing', () => {
    for (const header of [
      undefined,
      '',
      'sha256=',
      `sha1=${hex.slice(0, 40)}`,
      `sha256=${hex.slice(0, 63)}`,
      `sha256=${hex}00`,
      `sha256=${'z'.repeat(64)}`,
      hex,
      `sha256 = ${hex}`,
    ]) {
      assert.equal(verifyProviderSignature(body, header, SECRET), false, String(header));
    }
  });

  it('an empty app secret never verifies, even a signature made with the empty key', () => {
    const emptyKey = createHmac('sha256', '').update(body).digest('hex');
    assert.equal(verifyProviderSignature(body, `sha256=${emptyKey}`, ''), false);
  });
});
