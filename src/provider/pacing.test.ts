import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { ManualClock } from '../lib/clock.ts';
import {
  createMemorySlots,
  createPacer,
  createRedisSlots,
  PacingQueueFullError,
  sleep,
  withPacing,
  type Pacer,
  type PacerOptions,
  type Sleep,
} from './pacing.ts';
import { ProviderError, type OutboundMessage, type Provider, type ProviderCredentials } from './provider.ts';
import { waitFor } from '../../test/wait.ts';

const credentials: ProviderCredentials = { accessToken: 'token', phoneNumberId: 'pn_1', wabaId: 'waba_1' };
const text: OutboundMessage = { to: '15551234567', type: 'text', text: 'hello' };

/** The largest number of `times` (ms, any order) inside any window [t, t + windowMs). */
function maxInWindow(times: number[], windowMs = 1000): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let end = 0;
  for (let start = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end]! < sorted[start]! + windowMs) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

/**
 * A pacer on a clock that stands still, whose sleeps only record how long they were asked to last:
 * the slot each acquire got is its start time plus that wait, with no real waiting.
 */
function stillPacer(options: Partial<PacerOptions> = {}) {
  const clock = new ManualClock('2026-03-01T12:00:00Z');
  const waits: number[] = [];
  // A wait of 0 is the pacer yielding to the event loop for a slot already due: not a wait.
  const sleep: Sleep = async (ms) => {
    if (ms > 0) waits.push(ms);
  };
  const pacer = createPacer({ clock, sleep, keyPrefix: 'test', ...options });
  return { clock, waits, pacer };
}

function throttled(retryAfterSeconds: number | undefined): ProviderError {
  return new ProviderError({ category: 'throttled', retryable: true, message: '(#130429) Rate limit hit', code: 130429, retryAfterSeconds });
}

/**
 * A provider whose sendMessage answers the scripted outcomes in turn (an error is thrown), written as
 * a class with a private field so that calls which reach it with the wrong `this` would throw.
 */
class ScriptedProvider {
  readonly #outcomes: (Error | 'ok')[];
  calls: string[] = [];

  constructor(outcomes: (Error | 'ok')[] = []) {
    this.#outcomes = outcomes;
  }

  async sendMessage(_credentials: ProviderCredentials, message: OutboundMessage) {
    this.calls.push('sendMessage');
    const outcome = this.#outcomes.shift() ?? 'ok';
    if (outcome !== 'ok') throw outcome;
    return { providerMessageId: 'wamid.1', recipientWaId: message.to };
  }

  async markRead() {
    this.calls.push('markRead');
  }

  async sendTyping() {
    this.calls.push('sendTyping');
  }

  async getPhoneNumber() {
    this.calls.push('getPhoneNumber');
    return { phoneNumberId: credentials.phoneNumberId };
  }

  /** Not in the port: stands for a method the port gains after the wrapper was written. */
  async close() {
    this.calls.push(`close:${this.#outcomes.length}`);
  }
}

/** A pacer that records what was asked of it and always admits at once. */
function countingPacer(): Pacer & { asked: { key: string; perSecond: number }[] } {
  const asked: { key: string; perSecond: number }[] = [];
  return {
    asked,
    async acquire(key, perSecond) {
      asked.push({ key, perSecond });
    },
    intervalMs: (perSecond) => 1000 / perSecond,
  };
}

function paced(
  provider: ScriptedProvider,
  options: { pacer?: Pacer; maxThrottleRetries?: number; maxThrottleWaitMs?: number; signal?: AbortSignal; sleep?: Sleep } = {},
) {
  const slept: number[] = [];
  const pacer = options.pacer ?? countingPacer();
  const wrapped = withPacing(provider as unknown as Provider & { close(): Promise<void> }, {
    pacer,
    ceilingOf: () => 20,
    random: () => 0.5,
    sleep:
      options.sleep ??
      (async (ms) => {
        slept.push(ms);
      }),
    ...(options.maxThrottleRetries === undefined ? {} : { maxThrottleRetries: options.maxThrottleRetries }),
    ...(options.maxThrottleWaitMs === undefined ? {} : { maxThrottleWaitMs: options.maxThrottleWaitMs }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  return { wrapped, slept, pacer };
}

describe('outbound pacing: the pacer in memory', () => {
  it('sends asked for at once get slots one emission interval apart, in the order asked', async () => {
    const { pacer, waits } = stillPacer({ slackMs: 0 });
    await Promise.all(Array.from({ length: 10 }, () => pacer.acquire('pn_1', 100)));
    // The first slot is now, so it does not sleep at all.
    assert.deepEqual(waits, [10, 20, 30, 40, 50, 60, 70, 80, 90]);
  });

  it('a burst of 2,000 at 100 a second never puts more than 100 in any second, even when each send leaves up to the slack late', async () => {
    const { pacer, waits } = stillPacer({ maxWaitMs: 30_000 });
    await Promise.all(Array.from({ length: 2000 }, () => pacer.acquire('pn_1', 100)));
    const slots = [0, ...waits];
    // 10.25 ms apart, so 98 fit in a second when every send reaches the provider on time...
    assert.equal(maxInWindow(slots), 98);
    // ...and no more than 100 when each arrives late by any amount under the 25 ms of slack.
    let seed = 7;
    const late = slots.map((slot) => slot + ((seed = (seed * 48271) % 2147483647) / 2147483647) * 25);
    assert.ok(maxInWindow(late) <= 100);
    // The slack's price: 2.5 % over the ideal 19.99 s.
    assert.ok(Math.abs(slots.at(-1)! - 1999 * 10.25) < 1, `last slot at ${slots.at(-1)} ms`);
  });

  it('a send woken later than maxLateMs after its slot takes a new slot instead of going late', async () => {
    const clock = new ManualClock('2026-03-01T12:00:00Z');
    const started = clock.now().getTime();
    let stalls = 1;
    const sleep: Sleep = async (ms) => {
      // The first wake-up comes 30 ms late, as after a stalled event loop.
      clock.advance(ms + (stalls-- > 0 ? 30 : 0));
    };
    const pacer = createPacer({ clock, sleep, keyPrefix: 'test', slackMs: 20, maxLateMs: 5 });
    // 51 a second with 20 ms of slack: slots 20 ms apart.
    await pacer.acquire('pn_1', 51);
    assert.equal(clock.now().getTime() - started, 30, 'the first send went at a new slot, taken when it woke');
    await pacer.acquire('pn_1', 51);
    assert.equal(clock.now().getTime() - started, 50, 'the next slot is one interval after that one');
  });

  it('a send that keeps waking late goes after three new slots all the same', async () => {
    const clock = new ManualClock('2026-03-01T12:00:00Z');
    let sleeps = 0;
    const sleep: Sleep = async (ms) => {
      sleeps++;
      clock.advance(ms + 30);
    };
    const pacer = createPacer({ clock, sleep, keyPrefix: 'test' });
    await pacer.acquire('pn_1', 100);
    assert.equal(sleeps, 4);
  });

  it('without slack the spacing is exactly 1 / perSecond', async () => {
    const { pacer, waits } = stillPacer({ slackMs: 0 });
    await Promise.all(Array.from({ length: 41 }, () => pacer.acquire('pn_1', 20)));
    assert.equal(waits.at(-1), 2000);
    assert.equal(maxInWindow([0, ...waits]), 20);
  });

  it('numbers are paced independently', async () => {
    const { pacer, waits } = stillPacer({ slackMs: 0 });
    await Promise.all([pacer.acquire('pn_1', 10), pacer.acquire('pn_2', 10), pacer.acquire('pn_1', 10), pacer.acquire('pn_2', 10)]);
    assert.deepEqual(waits, [100, 100]);
  });

  it('a number idle for longer than its interval sends again at once', async () => {
    const { pacer, waits, clock } = stillPacer({ slackMs: 0 });
    await Promise.all([pacer.acquire('pn_1', 10), pacer.acquire('pn_1', 10)]);
    clock.advance(250);
    await pacer.acquire('pn_1', 10);
    assert.deepEqual(waits, [100]);
  });

  it('a ceiling that changes between sends spaces the next send by the new interval', async () => {
    const { pacer, waits } = stillPacer({ slackMs: 0 });
    await pacer.acquire('pn_1', 80);
    await pacer.acquire('pn_1', 20);
    await pacer.acquire('pn_1', 20);
    assert.deepEqual(waits, [12.5, 62.5]);
  });

  it('a slot further away than maxWaitMs is refused with PacingQueueFullError and reserves nothing', async () => {
    const { pacer, waits, clock } = stillPacer({ slackMs: 0, maxWaitMs: 50 });
    await Promise.all(Array.from({ length: 6 }, () => pacer.acquire('pn_1', 100)));
    const refused = await pacer.acquire('pn_1', 100).then(
      () => assert.fail('expected a refusal'),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof PacingQueueFullError);
    assert.equal(refused.key, 'pn_1');
    assert.equal(refused.waitMs, 60);
    assert.equal(refused.retryable, true);
    clock.advance(10);
    await pacer.acquire('pn_1', 100);
    assert.equal(waits.at(-1), 50, 'the refused slot was not taken: the next one is still the sixth');
  });

  it('reports how long each send waited for its slot, and each refusal, to its metrics', async () => {
    const clock = new ManualClock('2026-03-01T12:00:00Z');
    const waited: number[] = [];
    let refusals = 0;
    const metrics = { pacingWait: (seconds: number) => void waited.push(seconds), pacingRefused: () => void refusals++ };
    // Sleeping moves the pacer's clock, so what it measures is the wait it asked for.
    const sleep: Sleep = async (ms) => clock.advance(ms);
    const pacer = createPacer({ clock, sleep, keyPrefix: 'test', slackMs: 0, metrics });
    await pacer.acquire('pn_1', 100);
    await pacer.acquire('pn_1', 100);
    await pacer.acquire('pn_2', 100);
    // At 20 a second: the slot the sends at 100 left next (10 ms away), then one 50 ms after it.
    await pacer.acquire('pn_1', 20);
    await pacer.acquire('pn_1', 20);
    assert.deepEqual(waited, [0, 0.01, 0, 0.01, 0.05]);
    await pacer.acquire('pn_1', Infinity);
    assert.equal(waited.length, 5, 'a call without a ceiling is not paced and not reported');

    // Seven at once on a clock that stands still: the sixth slot is 50 ms away, within maxWaitMs; the seventh is refused.
    const still = stillPacer({ slackMs: 0, maxWaitMs: 50, metrics });
    await Promise.all(Array.from({ length: 7 }, () => still.pacer.acquire('pn_1', 100).catch(() => undefined)));
    assert.equal(refusals, 1);
    assert.equal(waited.length, 5 + 6);
  });

  it('no ceiling (Infinity) never waits; a ceiling of 0 or less is a programming error', async () => {
    const { pacer, waits } = stillPacer();
    await Promise.all(Array.from({ length: 5 }, () => pacer.acquire('pn_1', Infinity)));
    assert.deepEqual(waits, []);
    await assert.rejects(pacer.acquire('pn_1', 0), RangeError);
    await assert.rejects(pacer.acquire('pn_1', Number.NaN), RangeError);
  });

  it('on real timers no send leaves before its slot, one interval after the one before', async () => {
    const pacer = createPacer({ keyPrefix: 'test', slackMs: 0 });
    const started = performance.now();
    const released = await Promise.all(Array.from({ length: 6 }, () => pacer.acquire('pn_1', 50).then(() => performance.now() - started)));
    released.sort((a, b) => a - b);
    // Only the lower bound: a timer never fires early, but a busy machine may fire several late at once.
    // The clock keeps whole milliseconds, so a send may leave up to one before its slot.
    for (let i = 1; i < released.length; i++) {
      assert.ok(released[i]! >= i * 20 - 1, `sends left at ${released.map((ms) => ms.toFixed(1)).join(', ')} ms`);
    }
  });
});

describe('outbound pacing: abandoning a wait', () => {
  it('aborting while waiting for a slot rejects with the reason at once', async () => {
    const pacer = createPacer({ keyPrefix: 'test' });
    await pacer.acquire('pn_1', 1);
    const controller = new AbortController();
    const started = performance.now();
    const waiting = pacer.acquire('pn_1', 1, controller.signal);
    // The scenario itself: the abort comes while the acquire waits out its one-second slot.
    setTimeout(() => controller.abort(new Error('shutting down')), 10);
    await assert.rejects(waiting, /shutting down/);
    assert.ok(performance.now() - started < 500, 'did not wait out the one-second slot');
  });

  it('a signal aborted already rejects without taking a slot', async () => {
    const { pacer, waits } = stillPacer();
    await assert.rejects(pacer.acquire('pn_1', 1, AbortSignal.abort(new Error('gone'))), /gone/);
    await pacer.acquire('pn_1', 1);
    assert.deepEqual(waits, [], 'the first real send still goes at once');
  });
});

describe('outbound pacing: Redis failing', () => {
  it('while Redis cannot answer, each process paces alone in memory, and says so once', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    redis.on('error', () => undefined);
    try {
      const warnings: string[] = [];
      const { pacer, waits } = stillPacer({ redis, slackMs: 0, log: { warn: (_details, message) => warnings.push(message), info: () => undefined } });
      await Promise.all(Array.from({ length: 3 }, () => pacer.acquire('pn_1', 100)));
      assert.deepEqual(waits, [10, 20]);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /unreachable/);
    } finally {
      redis.disconnect();
    }
  });
});

const redisUrl = process.env.TEST_REDIS_URL;

describe('outbound pacing: shared through Redis (TEST_REDIS_URL)', { skip: redisUrl === undefined ? 'TEST_REDIS_URL not set' : false }, () => {
  const prefix = `test:pacing:${randomBytes(6).toString('hex')}`;
  const clients: Redis[] = [];

  before(async () => {
    for (let i = 0; i < 2; i++) {
      // Fail rather than fall back: these tests must run against the Redis they were given.
      const client = new Redis(redisUrl!, { connectTimeout: 2000, maxRetriesPerRequest: 1, retryStrategy: () => null });
      client.on('error', () => undefined);
      clients.push(client);
    }
    for (const client of clients) {
      const answer = await client.ping().catch((error: unknown) => {
        throw new Error(`TEST_REDIS_URL is set, but Redis at ${redisUrl} does not answer`, { cause: error });
      });
      assert.equal(answer, 'PONG');
    }
  });

  after(async () => {
    const [first] = clients;
    if (first?.status === 'ready') {
      const keys = await first.keys(`${prefix}:*`);
      if (keys.length > 0) await first.del(...keys);
    }
    for (const client of clients) client.disconnect();
  });

  it('two stores on one Redis hand out slots one interval apart between them, on Redis time', async () => {
    const [a, b] = clients.map((client) => createRedisSlots(client, prefix));
    const reservations = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a! : b!).reserve('shared-slots', 10, 10_000)));
    assert.ok(reservations.every((reservation) => reservation.admitted));
    const slots = reservations.map((reservation) => reservation.slotMs).sort((x, y) => x - y);
    for (let i = 1; i < slots.length; i++) assert.ok(Math.abs(slots[i]! - slots[i - 1]! - 10) < 1e-6, `slots ${i - 1} and ${i}: ${slots[i - 1]}, ${slots[i]}`);
    // Redis's clock, not this process's: within a minute of it, on this one machine.
    assert.ok(Math.abs(slots[0]! - Date.now()) < 60_000);
  });

  it('two pacers on one Redis together keep the one ceiling', async () => {
    const [one, two] = clients.map((redis) => createPacer({ redis, keyPrefix: prefix, slackMs: 0 }));
    const started = performance.now();
    const released = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? one! : two!).acquire('shared-pacers', 100).then(() => performance.now() - started)),
    );
    released.sort((x, y) => x - y);
    const spanMs = released.at(-1)! - released[0]!;
    // 40 sends at 100 a second: at least 390 ms from the first to the last, whichever process sends
    // them. No upper bound: how late a loaded machine lets them go is not the pacer's property.
    assert.ok(spanMs >= 385, `the 40 sends spanned ${spanMs.toFixed(1)} ms`);
  });

  it('a slot further away than maxWaitMs is refused and reserves nothing', async () => {
    const store = createRedisSlots(clients[0]!, prefix);
    const first = await store.reserve('refusals', 1000, 500);
    const refused = await store.reserve('refusals', 1000, 500);
    const again = await store.reserve('refusals', 1000, 500);
    assert.equal(first.admitted, true);
    assert.equal(refused.admitted, false);
    assert.equal(again.admitted, false);
    assert.equal(again.slotMs, first.slotMs + 1000, 'the refused slot is still the next one');
  });

  it("an idle number's key expires once its next slot has passed", async () => {
    const store = createRedisSlots(clients[0]!, prefix);
    await store.reserve('expiring', 20, 1000);
    const ttl = await clients[0]!.pttl(`${prefix}:expiring`);
    assert.ok(ttl > 0 && ttl <= 20, `the key lives ${ttl} ms`);
    await waitFor(async () => (await clients[0]!.exists(`${prefix}:expiring`)) === 0, { timeoutMs: 2000, message: 'the key to expire' });
  });
});

describe('outbound pacing: the provider wrapper', () => {
  it("sendMessage, markRead and sendTyping each wait for the number's slot at its ceiling; other calls do not", async () => {
    const provider = new ScriptedProvider();
    const { wrapped, pacer } = paced(provider);
    const sent = await wrapped.sendMessage(credentials, text);
    await wrapped.markRead(credentials, 'wamid.in');
    await wrapped.sendTyping(credentials, 'wamid.in');
    await wrapped.getPhoneNumber(credentials);
    assert.deepEqual(sent, { providerMessageId: 'wamid.1', recipientWaId: text.to });
    assert.deepEqual(provider.calls, ['sendMessage', 'markRead', 'sendTyping', 'getPhoneNumber']);
    assert.deepEqual(
      (pacer as ReturnType<typeof countingPacer>).asked,
      Array.from({ length: 3 }, () => ({ key: 'pn_1', perSecond: 20 })),
    );
  });

  it("a send's waitSignal ends its wait for a slot with the signal's reason, and the provider is never called", async () => {
    const provider = new ScriptedProvider();
    const { wrapped } = paced(provider, {
      pacer: createPacer({ keyPrefix: 'test', clock: new ManualClock('2026-06-01T00:00:00Z'), sleep: (ms, signal) => sleep(ms, signal) }),
    });
    const deadline = new AbortController();
    // Hold the number's next slots so that this send has to wait for one.
    const sending = wrapped.sendMessage(credentials, text);
    const waiting = wrapped.sendMessage(credentials, text, { waitSignal: deadline.signal });
    const refused = assert.rejects(waiting, /expired/);
    deadline.abort(new Error('expired'));
    await sending;
    await refused;
    assert.deepEqual(provider.calls, ['sendMessage'], 'the second send never left');
  });

  it('members the wrapper does not know pass through, bound to the provider', async () => {
    const provider = new ScriptedProvider(['ok', 'ok']);
    const { wrapped, pacer } = paced(provider);
    await wrapped.close();
    assert.deepEqual(provider.calls, ['close:2']);
    assert.deepEqual((pacer as ReturnType<typeof countingPacer>).asked, []);
  });

  it('a throttled send is retried after the wait the provider asked for plus jitter, each time through the pacer, and then succeeds', async () => {
    const provider = new ScriptedProvider([throttled(1), throttled(2), 'ok']);
    const { wrapped, slept, pacer } = paced(provider);
    const sent = await wrapped.sendMessage(credentials, text);
    assert.equal(sent.providerMessageId, 'wamid.1');
    assert.deepEqual(slept, [1100, 2200]);
    assert.equal((pacer as ReturnType<typeof countingPacer>).asked.length, 3);
  });

  it('a throttle without a hint waits one second', async () => {
    const provider = new ScriptedProvider([throttled(undefined), 'ok']);
    const { wrapped, slept } = paced(provider);
    await wrapped.sendMessage(credentials, text);
    assert.deepEqual(slept, [1100]);
  });

  it('a send still throttled after the last retry throws the provider error for the caller to retry later', async () => {
    const last = throttled(1);
    const provider = new ScriptedProvider([throttled(1), throttled(1), last]);
    const { wrapped, slept } = paced(provider, { maxThrottleRetries: 2 });
    await assert.rejects(wrapped.sendMessage(credentials, text), (error) => error === last);
    assert.equal(provider.calls.length, 3);
    assert.equal(slept.length, 2);
  });

  it('a throttle asking for a longer wait than the budget has left is thrown at once', async () => {
    const provider = new ScriptedProvider([throttled(4), throttled(420)]);
    const { wrapped, slept } = paced(provider, { maxThrottleWaitMs: 6000 });
    await assert.rejects(wrapped.sendMessage(credentials, text), (error) => error instanceof ProviderError && error.retryAfterSeconds === 420);
    assert.deepEqual(slept, [4400]);
  });

  it('other failures are not retried', async () => {
    const rejected = new ProviderError({ category: 'rejected', retryable: false, message: 'Re-engagement message', code: 131047 });
    const provider = new ScriptedProvider([rejected]);
    const { wrapped, slept } = paced(provider);
    await assert.rejects(wrapped.sendMessage(credentials, text), (error) => error === rejected);
    assert.deepEqual(slept, []);
    assert.equal(provider.calls.length, 1);
  });

  it("a full queue is answered as the provider's throttle, retryable once the excess has drained", async () => {
    const { pacer } = stillPacer({ slackMs: 0, maxWaitMs: 1000 });
    const provider = new ScriptedProvider();
    const { wrapped } = paced(provider, { pacer });
    await Promise.all(Array.from({ length: 21 }, () => wrapped.sendMessage({ ...credentials, phoneNumberId: 'pn_full' }, text)));
    // 21 sends at 20 a second reach 1 s of queue; the 22nd's slot is 1.05 s away.
    const error = await wrapped.sendMessage({ ...credentials, phoneNumberId: 'pn_full' }, text).then(
      () => assert.fail('expected a refusal'),
      (failure: unknown) => failure,
    );
    assert.ok(error instanceof ProviderError);
    assert.equal(error.category, 'throttled');
    assert.equal(error.retryable, true);
    assert.equal(error.retryAfterSeconds, 1);
    assert.ok(error.cause instanceof PacingQueueFullError);
  });

  it("aborting the wrapper's signal ends a throttle wait with its reason", async () => {
    const controller = new AbortController();
    const provider = new ScriptedProvider([throttled(5)]);
    const { wrapped } = paced(provider, { signal: controller.signal, sleep });
    const sending = wrapped.sendMessage(credentials, text);
    // The scenario itself: the abort comes during the five-second throttle wait.
    setTimeout(() => controller.abort(new Error('draining')), 10);
    await assert.rejects(sending, /draining/);
    assert.equal(provider.calls.length, 1);
  });
});

describe('outbound pacing: the memory store alone', () => {
  it('reserving answers the slot on the store clock', async () => {
    const clock = new ManualClock(1_000_000);
    const store = createMemorySlots(() => clock.now().getTime());
    assert.deepEqual(await store.reserve('k', 50, 1000), { admitted: true, waitMs: 0, slotMs: 1_000_000 });
    assert.deepEqual(await store.reserve('k', 50, 1000), { admitted: true, waitMs: 50, slotMs: 1_000_050 });
  });
});
