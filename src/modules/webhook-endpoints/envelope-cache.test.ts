import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, MINUTE } from '../../lib/clock.ts';
import { QueuedEnvelopes, toSendable, type SendableEvent } from './envelope-cache.ts';

const sendable = (id: string, size = 10): SendableEvent => ({
  id,
  type: 'contact.created',
  organizationId: 'org_1',
  connectionId: null,
  body: 'x'.repeat(size),
});

describe('the events queued for delivery in this process', () => {
  it('takes the bytes a delivery sends and the fields its headers and row name', () => {
    const envelope = {
      id: 'evt_1',
      object: 'event' as const,
      type: 'contact.created',
      organization_id: 'org_1',
      connection_id: 'conn_1',
      created_at: '2026-11-27T00:00:00.000Z',
      data: { object: { id: 'ct_1', name: 'Ada "the first"', metadata: { ü: 1 } } },
    };
    assert.deepEqual(toSendable(envelope as never), {
      id: 'evt_1',
      type: 'contact.created',
      organizationId: 'org_1',
      connectionId: 'conn_1',
      body: JSON.stringify(envelope),
    });
  });

  it('keeps an event until each delivery it was queued for has run here, then frees its room', () => {
    const cache = new QueuedEnvelopes(new ManualClock());
    assert.equal(cache.keep(sendable('evt_1', 7), 3), true);
    assert.equal(cache.size, 7);
    cache.delivered('evt_1');
    cache.delivered('evt_1');
    assert.equal(cache.get('evt_1')?.id, 'evt_1', 'one delivery still to run');
    cache.delivered('evt_1');
    assert.equal(cache.get('evt_1'), undefined);
    assert.equal(cache.size, 0);
    cache.delivered('evt_1');
    cache.delivered('evt_unknown');
    assert.equal(cache.size, 0, 'a delivery of an event not kept here changes nothing');
  });

  it('keeps nothing for no delivery, and an event once', () => {
    const cache = new QueuedEnvelopes(new ManualClock());
    assert.equal(cache.keep(sendable('evt_1'), 0), false);
    assert.equal(cache.keep(sendable('evt_2'), 1), true);
    assert.equal(cache.keep(sendable('evt_2'), 1), false);
    assert.equal(cache.size, 10);
  });

  it('when full, turns the newest away rather than push out the oldest, whose delivery runs next', () => {
    const cache = new QueuedEnvelopes(new ManualClock(), { budget: 25 });
    assert.equal(cache.keep(sendable('evt_1'), 1), true);
    assert.equal(cache.keep(sendable('evt_2'), 1), true);
    assert.equal(cache.keep(sendable('evt_3'), 1), false, 'no room: its deliveries will read it back');
    assert.equal(cache.get('evt_1')?.id, 'evt_1');
    assert.equal(cache.keep(sendable('evt_4', 5), 1), true, 'a smaller one fits');
    cache.delivered('evt_1');
    assert.equal(cache.keep(sendable('evt_5'), 1), true, 'room given back by a delivery');
    assert.equal(cache.size, 25);
  });

  it('lets go of events whose deliveries never ran here, once their time is up and room is wanted', () => {
    const clock = new ManualClock('2026-11-27T00:00:00Z');
    const cache = new QueuedEnvelopes(clock, { budget: 20, ttlMs: 10 * MINUTE });
    cache.keep(sendable('evt_1'), 2);
    clock.advance(MINUTE);
    cache.keep(sendable('evt_2'), 1);
    clock.advance(9 * MINUTE - 1);
    assert.equal(cache.keep(sendable('evt_3'), 1), false, 'not yet');
    clock.advance(1);
    assert.equal(cache.keep(sendable('evt_3'), 1), true, "the first's time is up");
    assert.equal(cache.get('evt_1'), undefined);
    assert.equal(cache.get('evt_2')?.id, 'evt_2', 'only the expired go');
    assert.equal(cache.size, 20);
  });
});
