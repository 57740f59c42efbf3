import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from './clock.ts';
import { RecentReads } from './recent-reads.ts';

interface Row {
  id: string;
  version: number;
}

/** A store of one table that counts its reads. */
function fakeStore() {
  const rows = new Map<string, Row>();
  let reads = 0;
  return {
    rows,
    get reads() {
      return reads;
    },
    read: (key: string) => async () => {
      reads++;
      return rows.get(key);
    },
  };
}

const tagsOf = (row: Row) => [row.id];

describe('RecentReads', () => {
  it('answers a record read within the TTL without reading again, and reads again once it has passed', async () => {
    const clock = new ManualClock('2026-06-01T12:00:00Z');
    const cache = new RecentReads<Row>({ clock, ttlMs: 1000, maxEntries: 10 });
    const store = fakeStore();
    store.rows.set('a', { id: 'a', version: 1 });
    assert.deepEqual(await cache.read('a', store.read('a'), tagsOf), { id: 'a', version: 1 });
    store.rows.set('a', { id: 'a', version: 2 });
    clock.advance(999);
    assert.deepEqual(await cache.read('a', store.read('a'), tagsOf), { id: 'a', version: 1 }, 'another process’s change is not seen yet');
    assert.equal(store.reads, 1);
    clock.advance(1);
    assert.deepEqual(await cache.read('a', store.read('a'), tagsOf), { id: 'a', version: 2 }, 'seen once the TTL has passed');
    assert.equal(store.reads, 2);
  });

  it('answers a fresh record as it is, a read in a promise', async () => {
    const cache = new RecentReads<Row>({ clock: new ManualClock('2026-06-01T12:00:00Z'), ttlMs: 1000, maxEntries: 10 });
    const store = fakeStore();
    store.rows.set('a', { id: 'a', version: 1 });
    const first = cache.read('a', store.read('a'), tagsOf);
    assert.ok(first instanceof Promise, 'a read from the store');
    await first;
    assert.deepEqual(cache.read('a', store.read('a'), tagsOf), { id: 'a', version: 1 }, 'remembered: no promise, so no turn of the microtask queue');
  });

  it('forget drops the record at once: the next read goes to the store', async () => {
    const clock = new ManualClock();
    const cache = new RecentReads<Row>({ clock, ttlMs: 1000, maxEntries: 10 });
    const store = fakeStore();
    store.rows.set('a', { id: 'a', version: 1 });
    await cache.read('hash-of-a', store.read('a'), tagsOf);
    store.rows.set('a', { id: 'a', version: 2 });
    cache.forget('a');
    assert.deepEqual(await cache.read('hash-of-a', store.read('a'), tagsOf), { id: 'a', version: 2 });
  });

  it('keeps nothing that was not found, and nothing whose read threw', async () => {
    const clock = new ManualClock();
    const cache = new RecentReads<Row>({ clock, ttlMs: 1000, maxEntries: 10 });
    const store = fakeStore();
    assert.equal(await cache.read('a', store.read('a'), tagsOf), undefined);
    await assert.rejects(
      cache.read(
        'a',
        async () => {
          throw new Error('revoked');
        },
        tagsOf,
      ),
      /revoked/,
    );
    assert.equal(cache.size, 0);
    store.rows.set('a', { id: 'a', version: 1 });
    assert.deepEqual(await cache.read('a', store.read('a'), tagsOf), { id: 'a', version: 1 });
  });

  it('a read in flight while a record is forgotten is answered but not kept', async () => {
    const clock = new ManualClock();
    const cache = new RecentReads<Row>({ clock, ttlMs: 1000, maxEntries: 10 });
    let release!: (row: Row) => void;
    const inFlight = cache.read('a', () => new Promise<Row>((resolve) => (release = resolve)), tagsOf);
    cache.forget('a');
    release({ id: 'a', version: 1 });
    assert.deepEqual(await inFlight, { id: 'a', version: 1 });
    assert.equal(cache.size, 0, 'the old version is not kept after the change');
  });

  it('for a while after forget, a record with that tag is not kept (a change not yet committed elsewhere)', async () => {
    const clock = new ManualClock();
    const cache = new RecentReads<Row>({ clock, ttlMs: 1000, maxEntries: 10, quarantineMs: 5000 });
    const store = fakeStore();
    store.rows.set('a', { id: 'a', version: 1 });
    cache.forget('a');
    await cache.read('a', store.read('a'), tagsOf);
    await cache.read('a', store.read('a'), tagsOf);
    assert.equal(store.reads, 2, 'read from the store each time');
    clock.advance(5000);
    await cache.read('a', store.read('a'), tagsOf);
    await cache.read('a', store.read('a'), tagsOf);
    assert.equal(store.reads, 3, 'kept again once the quarantine is over');
  });

  it('holds at most maxEntries, dropping the least recently used first', async () => {
    const clock = new ManualClock();
    const cache = new RecentReads<Row>({ clock, ttlMs: 1000, maxEntries: 2 });
    const store = fakeStore();
    for (const id of ['a', 'b', 'c']) store.rows.set(id, { id, version: 1 });
    await cache.read('a', store.read('a'), tagsOf);
    await cache.read('b', store.read('b'), tagsOf);
    await cache.read('a', store.read('a'), tagsOf); // a is now the most recently used
    await cache.read('c', store.read('c'), tagsOf); // b goes
    assert.equal(cache.size, 2);
    assert.equal(store.reads, 3);
    await cache.read('a', store.read('a'), tagsOf);
    assert.equal(store.reads, 3, 'a was kept');
    await cache.read('b', store.read('b'), tagsOf);
    assert.equal(store.reads, 4, 'b was dropped');
  });
});
