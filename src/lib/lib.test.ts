import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ID_PREFIXES, idPattern, newId } from './ids.ts';
import { SecretBox, constantTimeEqual, hashPassword, pooledRandomBytes, randomBase62, verifyPassword } from './crypto.ts';
import { DAY, ManualClock, isoDayLater } from './clock.ts';

describe('identifiers', () => {
  it('are <prefix>_<26 characters> for every kind', () => {
    for (const kind of Object.keys(ID_PREFIXES) as (keyof typeof ID_PREFIXES)[]) {
      assert.match(newId(kind), new RegExp(idPattern(kind)));
    }
  });

  it('sort in minting order, even within one millisecond', () => {
    const now = Date.now();
    const ids = Array.from({ length: 1000 }, () => newId('message', now));
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('sort by creation time across milliseconds', () => {
    const earlier = newId('contact', Date.parse('2026-01-01T00:00:00Z'));
    const later = newId('contact', Date.parse('2026-01-01T00:00:01Z'));
    assert.ok(earlier < later);
  });
});

describe('crypto helpers', () => {
  it('random keys use the whole base62 alphabet at the requested length', () => {
    const sample = Array.from({ length: 200 }, () => randomBase62(32)).join('');
    assert.equal(randomBase62(32).length, 32);
    assert.equal(new Set(sample).size, 62);
  });

  it('passwords verify only against their own hash', async () => {
    const hash = await hashPassword('correct horse battery');
    assert.match(hash, /^scrypt\$32768\$8\$1\$/);
    assert.equal(await verifyPassword('correct horse battery', hash), true);
    assert.equal(await verifyPassword('correct horse batterx', hash), false);
    assert.equal(await verifyPassword('anything', 'not-a-hash'), false);
    // A cheaper hash (PASSWORD_HASH_COST, tests only) carries its own N, and verifies by it.
    const cheap = await hashPassword('correct horse battery', 10);
    assert.match(cheap, /^scrypt\$1024\$8\$1\$/);
    assert.equal(await verifyPassword('correct horse battery', cheap), true);
    assert.equal(await verifyPassword('correct horse batterx', cheap), false);
  });

  it('sealed secrets open only with the same master key, and tampering is detected', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('whsec_secret');
    assert.doesNotMatch(sealed, /whsec_secret/);
    assert.equal(box.open(sealed), 'whsec_secret');
    assert.notEqual(box.seal('whsec_secret'), sealed, 'a fresh IV each time');
    assert.throws(() => new SecretBox(randomBytes(32)).open(sealed));
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    assert.throws(() => box.open(tampered));
  });

  it('a secret sealed for one record opens only for that record', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('sk_live_token', 'cna_one');
    assert.equal(box.open(sealed, 'cna_one'), 'sk_live_token');
    assert.throws(() => box.open(sealed, 'cna_two'));
    assert.throws(() => box.open(sealed));
  });

  it('constant-time comparison is still a comparison', () => {
    assert.equal(constantTimeEqual('abc', 'abc'), true);
    assert.equal(constantTimeEqual('abc', 'abd'), false);
    assert.equal(constantTimeEqual('abc', 'abcd'), false);
  });
});

describe('pooled random bytes', () => {
  it('never hands out the same bytes twice, across refills and for sizes past the pool', () => {
    const seen = new Set<string>();
    // 3,000 draws of 16 bytes span a dozen refills of the 4 KiB pool.
    for (let draw = 0; draw < 3000; draw++) seen.add(pooledRandomBytes(16).toString('hex'));
    assert.equal(seen.size, 3000);
    const large = pooledRandomBytes(10_000);
    assert.equal(large.length, 10_000);
    assert.ok(new Set(large).size > 200, 'a large draw is random throughout');
  });
});

describe('the manual clock', () => {
  it('moves only when told to', () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    assert.equal(clock.now().toISOString(), '2026-01-01T00:00:00.000Z');
    clock.advance(1500);
    assert.equal(clock.now().toISOString(), '2026-01-01T00:00:01.500Z');
  });
});

describe('isoDayLater', () => {
  it('is the instant a day later as toISOString writes it, across month, year and leap-day ends', () => {
    const start = Date.parse('2023-12-25T00:00:00.000Z');
    // Every day of more than four years, each at a different time of day (milliseconds included).
    for (let day = 0; day < 1500; day++) {
      const at = new Date(start + day * DAY + ((day * 7_919_113) % DAY)).toISOString();
      assert.equal(isoDayLater(at), new Date(Date.parse(at) + DAY).toISOString(), at);
    }
  });

  it('reads timestamps of other shapes as Date does', () => {
    for (const at of ['2026-02-10T08:00:00Z', '2026-02-10T08:00:00.000+01:00', '+010000-01-05T00:00:00.000Z', '2026-02-28T23:59:59.999Z']) {
      assert.equal(isoDayLater(at), new Date(Date.parse(at) + DAY).toISOString(), at);
    }
  });
});
