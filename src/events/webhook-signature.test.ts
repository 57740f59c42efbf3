import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { DEFAULT_TOLERANCE_SECONDS, SIGNATURE_HEADER, signatureHeader, verifyWebhookSignature } from './webhook-signature.ts';

const SECRET = 'whsec_current_0123456789abcdef';
const OLD_SECRET = 'whsec_previous_fedcba9876543210';
const T = 1_767_225_600; // 2026-01-01T00:00:00Z
const AT_T = new Date(T * 1000);
const BODY = '{"id":"evt_01JEXAMPLE","object":"event","type":"message.received","data":{"object":{"text":"héllo 👋"}}}';

describe('webhook signatures', () => {
  describe('signing', () => {
    it('produces t=<unix>,v1=<lowercase hex HMAC-SHA256 of "t.body">', () => {
      const header = signatureHeader(BODY, [SECRET], T);
      const expected = createHmac('sha256', SECRET).update(`${T}.${BODY}`).digest('hex');
      assert.equal(header, `t=${T},v1=${expected}`);
      assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
    });

    it('signs bytes and the same text identically', () => {
      assert.equal(signatureHeader(Buffer.from(BODY, 'utf8'), [SECRET], T), signatureHeader(BODY, [SECRET], T));
    });

    it('carries one v1 per secret during a rotation', () => {
      const header = signatureHeader(BODY, [SECRET, OLD_SECRET], T);
      assert.equal(header.match(/v1=/g)?.length, 2);
    });

    it('refuses to sign without a secret or with a timestamp that is not whole seconds', () => {
      assert.throws(() => signatureHeader(BODY, [], T), RangeError);
      assert.throws(() => signatureHeader(BODY, [''], T), RangeError);
      assert.throws(() => signatureHeader(BODY, [SECRET], T + 0.5), RangeError);
      assert.throws(() => signatureHeader(BODY, [SECRET], Date.now() * 1_000_000), RangeError);
    });

    it('names the header in lowercase, as Node presents incoming headers', () => {
      assert.equal(SIGNATURE_HEADER, 'service-signature');
      assert.equal(DEFAULT_TOLERANCE_SECONDS, 300);
    });
  });

  describe('verification: happy path', () => {
    it('a signed body verifies with its secret and reports the timestamp', () => {
      const header = signatureHeader(BODY, [SECRET], T);
      assert.deepEqual(verifyWebhookSignature(BODY, header, SECRET, { now: AT_T }), { valid: true, timestamp: T });
    });

    it('accepts the body as bytes as well as text', () => {
      const header = signatureHeader(BODY, [SECRET], T);
      assert.equal(verifyWebhookSignature(Buffer.from(BODY), header, [SECRET], { now: AT_T }).valid, true);
      assert.equal(verifyWebhookSignature(new TextEncoder().encode(BODY), header, [SECRET], { now: AT_T }).valid, true);
    });

    it('during a rotation either secret verifies the two-signature header', () => {
      const header = signatureHeader(BODY, [SECRET, OLD_SECRET], T);
      assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: AT_T }).valid, true);
      assert.equal(verifyWebhookSignature(BODY, header, OLD_SECRET, { now: AT_T }).valid, true);
      assert.equal(verifyWebhookSignature(BODY, header, ['whsec_unrelated', OLD_SECRET], { now: AT_T }).valid, true);
    });

    it('a receiver holding both secrets verifies a header signed with only the new one', () => {
      const header = signatureHeader(BODY, [SECRET], T);
      assert.equal(verifyWebhookSignature(BODY, header, [OLD_SECRET, SECRET], { now: AT_T }).valid, true);
    });

    it('tolerates spaces, unknown schemes and uppercase hex', () => {
      const hex = createHmac('sha256', SECRET).update(`${T}.${BODY}`).digest('hex');
      for (const header of [
        ` t = ${T} , v1 = ${hex} `,
        `v2=abc,t=${T},v1=${hex},future=1`,
        `t=${T},v1=${'0'.repeat(64)},v1=${hex}`,
        `t=${T},v1=${hex.toUpperCase()}`,
        `t=${T},,v1=${hex},`,
      ]) {
        assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: AT_T }).valid, true, header);
      }
    });

    it('uses the current time when no `now` is given', () => {
      const now = Math.floor(Date.now() / 1000);
      assert.equal(verifyWebhookSignature(BODY, signatureHeader(BODY, [SECRET], now), SECRET).valid, true);
    });
  });

  describe('verification: refusals', () => {
    const header = signatureHeader(BODY, [SECRET], T);

    it('a wrong secret does not match', () => {
      assert.deepEqual(verifyWebhookSignature(BODY, header, 'whsec_wrong', { now: AT_T }), { valid: false, reason: 'no_matching_signature' });
    });

    it('a body changed by one byte does not match', () => {
      const bytes = Buffer.from(BODY);
      bytes[10] = bytes[10]! ^ 0x01;
      assert.equal(verifyWebhookSignature(bytes, header, SECRET, { now: AT_T }).valid, false);
      assert.equal(verifyWebhookSignature(BODY + ' ', header, SECRET, { now: AT_T }).valid, false);
    });

    it('the raw bytes count: the same JSON re-serialised with other spacing does not match', () => {
      const reserialised = JSON.stringify(JSON.parse(BODY), null, 2);
      assert.deepEqual(JSON.parse(reserialised), JSON.parse(BODY));
      assert.deepEqual(verifyWebhookSignature(reserialised, header, SECRET, { now: AT_T }), { valid: false, reason: 'no_matching_signature' });
    });

    it('a parsed body (not the raw bytes) is a mismatch, not a crash', () => {
      assert.equal(verifyWebhookSignature(JSON.parse(BODY) as string, header, SECRET, { now: AT_T }).valid, false);
    });

    it('a timestamp 301 s old or 301 s in the future is outside the tolerance; 299 s either way passes', () => {
      const outside = { valid: false, reason: 'timestamp_outside_tolerance' };
      assert.deepEqual(verifyWebhookSignature(BODY, header, SECRET, { now: (T + 301) * 1000 }), outside);
      assert.deepEqual(verifyWebhookSignature(BODY, header, SECRET, { now: (T - 301) * 1000 }), outside);
      assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: (T + 299) * 1000 }).valid, true);
      assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: new Date((T - 299) * 1000) }).valid, true);
    });

    it('the tolerance can be narrowed', () => {
      assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: (T + 61) * 1000, toleranceSeconds: 60 }).valid, false);
      assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: (T + 59) * 1000, toleranceSeconds: 60 }).valid, true);
    });

    it('a bad `now` or tolerance fails closed', () => {
      assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: Number.NaN }).valid, false);
      assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: new Date('nonsense') }).valid, false);
      assert.equal(verifyWebhookSignature(BODY, header, SECRET, { now: AT_T, toleranceSeconds: Number.NaN }).valid, false);
    });

    it('an empty secret never verifies, even a header signed with the empty key', () => {
      const hex = createHmac('sha256', '').update(`${T}.${BODY}`).digest('hex');
      assert.equal(verifyWebhookSignature(BODY, `t=${T},v1=${hex}`, '', { now: AT_T }).valid, false);
      assert.equal(verifyWebhookSignature(BODY, `t=${T},v1=${hex}`, [], { now: AT_T }).valid, false);
    });

    it('a missing header is reported as such', () => {
      for (const missing of [undefined, null, '', '   ']) {
        assert.deepEqual(verifyWebhookSignature(BODY, missing, SECRET, { now: AT_T }), { valid: false, reason: 'missing_header' });
      }
    });

    it('malformed headers of every shape are refused without throwing', () => {
      const hex = createHmac('sha256', SECRET).update(`${T}.${BODY}`).digest('hex');
      for (const malformed of [
        'garbage',
        `v1=${hex}`,
        `t=,v1=${hex}`,
        `t=abc,v1=${hex}`,
        `t=-5,v1=${hex}`,
        `t=1.5,v1=${hex}`,
        `t=1e9,v1=${hex}`,
        `t=${'9'.repeat(40)},v1=${hex}`,
        `t=${T},t=${T},v1=${hex}`,
        `t=${T},t=${T + 1},v1=${hex}`,
        `=${T},v1=${hex}`,
        `t=${T},v1`,
        `t${T},v1=${hex}`,
        ',,,',
        '=',
        't=',
        '\u0000\uffff',
      ]) {
        const result = verifyWebhookSignature(BODY, malformed, SECRET, { now: AT_T });
        assert.deepEqual(result, { valid: false, reason: 'malformed_header' }, malformed);
      }
    });

    it('v1 values that are not 64 hex digits simply do not match', () => {
      for (const candidate of ['', 'zz', 'g'.repeat(64), 'ab'.repeat(33), '0x' + 'a'.repeat(62), ' '.repeat(64)]) {
        assert.deepEqual(
          verifyWebhookSignature(BODY, `t=${T},v1=${candidate}`, SECRET, { now: AT_T }),
          { valid: false, reason: 'no_matching_signature' },
          candidate,
        );
      }
      assert.deepEqual(verifyWebhookSignature(BODY, `t=${T}`, SECRET, { now: AT_T }), { valid: false, reason: 'no_matching_signature' });
    });

    it('never throws, whatever it is handed', () => {
      const inputs: unknown[] = [undefined, null, 0, 1, {}, [], 'x', Symbol('s'), () => 1, new Date(), Buffer.alloc(0)];
      for (const body of inputs) {
        for (const head of inputs) {
          for (const secrets of inputs) {
            assert.doesNotThrow(() => verifyWebhookSignature(body as string, head as string, secrets as string, { now: AT_T }));
          }
        }
        assert.doesNotThrow(() => verifyWebhookSignature(BODY, signatureHeader(BODY, [SECRET], T), SECRET, body as { now: number }));
        assert.doesNotThrow(() =>
          verifyWebhookSignature(BODY, signatureHeader(BODY, [SECRET], T), SECRET, { now: body as number, toleranceSeconds: body as number }),
        );
      }
    });
  });
});
