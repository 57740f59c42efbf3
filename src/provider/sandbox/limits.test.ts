import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SECOND } from '../../lib/clock.ts';
import { assertGraphError, changesOf, setup, V, type Harness } from './harness.test.ts';

/** Sends `count` texts in the current (manual-clock) second; answers the HTTP statuses. */
async function burst(h: Harness, connection: { token: string; phoneNumberId: string }, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let index = 0; index < count; index += 1) statuses.push((await h.sendText(connection.token, connection.phoneNumberId)).status);
  return statuses;
}

async function inWindow(h: Harness, code?: string) {
  const connection = await h.connect(code);
  await h.inbound({ phone_number_id: connection.phoneNumberId, type: 'text', text: 'hi' });
  return connection;
}

function usageOf(headers: Record<string, unknown>): Record<string, any[]> {
  return JSON.parse(String(headers['x-business-use-case-usage']));
}

describe('the sandbox provider: throughput', () => {
  it('a number sends 80 messages per second; the 81st is 130429 (HTTP 400) until the next second', async (t) => {
    const h = await setup(t, { autoStatus: false });
    const connection = await inWindow(h);
    const statuses = await burst(h, connection, 81);
    assert.deepEqual(statuses.slice(0, 80), Array(80).fill(200));
    const over = await h.sendText(connection.token, connection.phoneNumberId);
    assertGraphError(over, 400, 130429);
    assert.match(over.body.error.error_data.details, /80 messages per second/);
    const read = await h.send(connection.token, connection.phoneNumberId, { status: 'read', message_id: 'wamid.unknown' });
    assertGraphError(read, 400, 100);
    h.clock.advance(SECOND);
    assert.equal((await h.sendText(connection.token, connection.phoneNumberId)).status, 200);
  });

  it('a refused send takes its slot of the second too', async (t) => {
    const h = await setup(t, { autoStatus: false });
    const connection = await inWindow(h);
    await h.control('/behaviour', { throughput_mps: 2 });
    // Outside its window: refused after it took the first slot.
    assertGraphError(await h.sendText(connection.token, connection.phoneNumberId, '15550009999'), 400, 131047);
    assert.equal((await h.sendText(connection.token, connection.phoneNumberId)).status, 200);
    assertGraphError(await h.sendText(connection.token, connection.phoneNumberId), 400, 130429);
  });

  it('coexistence numbers are held to 20 per second; numbers are counted separately', async (t) => {
    const h = await setup(t, { autoStatus: false });
    const coexistence = await inWindow(h, 'coexistence-number');
    const cloud = await inWindow(h);
    assert.deepEqual(await burst(h, coexistence, 21), [...Array(20).fill(200), 400]);
    assert.deepEqual(await burst(h, cloud, 21), Array(21).fill(200));
  });

  it('throughput_mps overrides the ceiling for every number; null restores the defaults', async (t) => {
    const h = await setup(t, { autoStatus: false });
    const connection = await inWindow(h);
    assert.equal((await h.control('/behaviour', { throughput_mps: 3 })).throughput_mps, 3);
    assert.deepEqual(await burst(h, connection, 4), [200, 200, 200, 400]);
    await h.control('/behaviour', { throughput_mps: 1_000_000 });
    assert.deepEqual(await burst(h, connection, 90), Array(90).fill(200));
    assert.equal((await h.control('/behaviour', { throughput_mps: null })).throughput_mps, null);
    h.clock.advance(SECOND);
    const statuses = await burst(h, connection, 81);
    assert.equal(statuses.filter((status) => status === 400).length, 1);
    assert.equal((await h.call('POST', '/control/behaviour', { throughput_mps: 0 })).status, 400);
    // Past what the store's column holds (32 bits on PostgreSQL): refused, never a failed write.
    assert.equal((await h.call('POST', '/control/behaviour', { throughput_mps: 2 ** 31 })).status, 400);
  });

  it('a throughput upgrade makes the number HIGH (1000 mps, unlimited tier) and sends THROUGHPUT_UPGRADE', async (t) => {
    const h = await setup(t, { autoStatus: false });
    const connection = await inWindow(h);
    const upgraded = await h.control('/throughput', { phone_number_id: connection.phoneNumberId, level: 'HIGH' });
    assert.equal(upgraded.throughput_level, 'HIGH');
    const node = await h.call('GET', `${V}/${connection.phoneNumberId}`, undefined, connection.token);
    assert.deepEqual(node.body.throughput, { level: 'HIGH' });
    assert.equal(node.body.messaging_limit_tier, 'TIER_UNLIMITED');
    const [change] = changesOf(h.receiver.received, 'phone_number_quality_update');
    assert.equal(change!.value.event, 'THROUGHPUT_UPGRADE');
    assert.equal(change!.value.current_limit, 'TIER_UNLIMITED');
    assert.deepEqual(await burst(h, connection, 81), Array(81).fill(200));
    const coexistence = await h.connect('coexistence');
    assert.equal((await h.call('POST', '/control/throughput', { phone_number_id: coexistence.phoneNumberId, level: 'HIGH' })).status, 409);
  });
});

describe('the sandbox provider: usage headers and throttling', () => {
  it('calls on an account carry x-business-use-case-usage keyed by its WABA id', async (t) => {
    const h = await setup(t, { autoStatus: false });
    const connection = await inWindow(h);
    const node = await h.call('GET', `${V}/${connection.phoneNumberId}`, undefined, connection.token);
    const usage = usageOf(node.headers);
    assert.deepEqual(Object.keys(usage), [connection.wabaId]);
    const [entry] = usage[connection.wabaId]!;
    assert.deepEqual(Object.keys(entry).sort(), ['call_count', 'estimated_time_to_regain_access', 'total_cputime', 'total_time', 'type']);
    assert.equal(entry.type, 'whatsapp_business_management');
    assert.ok(entry.call_count >= 1 && entry.call_count <= 100);
    assert.equal(entry.estimated_time_to_regain_access, 0);

    await burst(h, connection, 39);
    const sent = await h.sendText(connection.token, connection.phoneNumberId);
    const messaging = usageOf(sent.headers)[connection.wabaId]![0];
    assert.equal(messaging.type, 'whatsapp');
    assert.equal(messaging.call_count, 50, '40 of 80 sends this second');
    const refused = await h.call('GET', `${V}/999999999999999`, undefined, connection.token);
    assert.ok(usageOf(refused.headers)[connection.wabaId], 'errors carry the header too');
  });

  it('throttle makes calls fail with 80007 and the minutes to wait, for N calls, then clears', async (t) => {
    const h = await setup(t, { autoStatus: false });
    const connection = await inWindow(h);
    const set = await h.control('/behaviour', { throttle: { estimated_time_to_regain_access: 7, calls: 2 } });
    assert.deepEqual(set.throttle, { code: 80007, estimated_time_to_regain_access: 7, calls: 2, waba_id: null });
    for (let call = 0; call < 2; call += 1) {
      const refused = await h.call('GET', `${V}/${connection.wabaId}/message_templates`, undefined, connection.token);
      assertGraphError(refused, 400, 80007);
      const [entry] = usageOf(refused.headers)[connection.wabaId]!;
      assert.equal(entry.call_count, 100);
      assert.equal(entry.estimated_time_to_regain_access, 7);
    }
    assert.equal((await h.call('GET', `${V}/${connection.wabaId}/message_templates`, undefined, connection.token)).status, 200);
    assert.equal((await h.call('GET', '/control/behaviour')).body.throttle, null);
  });

  it('throttle with a messaging code, one account only, until cleared; code 4 adds x-app-usage', async (t) => {
    const h = await setup(t, { autoStatus: false });
    const throttled = await inWindow(h);
    const free = await inWindow(h);
    await h.control('/behaviour', { throttle: { code: 130429, waba_id: throttled.wabaId } });
    for (let call = 0; call < 3; call += 1) assertGraphError(await h.sendText(throttled.token, throttled.phoneNumberId), 400, 130429);
    assert.equal((await h.sendText(free.token, free.phoneNumberId)).status, 200);
    await h.control('/behaviour', { throttle: { code: 4, estimated_time_to_regain_access: 2 } });
    const app = await h.sendText(free.token, free.phoneNumberId);
    assertGraphError(app, 400, 4);
    assert.equal(JSON.parse(String(app.headers['x-app-usage'])).estimated_time_to_regain_access, 2);
    await h.control('/behaviour', { throttle: null });
    assert.equal((await h.sendText(throttled.token, throttled.phoneNumberId)).status, 200);
    assert.equal((await h.call('POST', '/control/behaviour', { throttle: { code: 500 } })).status, 400);
  });

  it('every Graph answer carries the provider headers; the error trace id matches x-fb-trace-id', async (t) => {
    const h = await setup(t);
    const connection = await h.connect();
    const ok = await h.call('GET', `${V}/${connection.phoneNumberId}`, undefined, connection.token);
    assert.equal(ok.headers['facebook-api-version'], 'v24.0');
    assert.equal(ok.headers['content-type'], 'application/json; charset=UTF-8');
    assert.match(String(ok.headers['x-fb-trace-id']), /^[\w-]+$/);
    assert.match(String(ok.headers['x-fb-request-id']), /^[\w-]+$/);
    assert.equal(ok.headers['cache-control'], 'private, no-cache, no-store, must-revalidate');
    const other = await h.call('GET', `/graph/v23.0/${connection.phoneNumberId}`, undefined, connection.token);
    assert.equal(other.headers['facebook-api-version'], 'v23.0');
    const failed = await h.call('GET', `${V}/${connection.phoneNumberId}`, undefined, 'bad-token');
    assert.equal(failed.body.error.fbtrace_id, failed.headers['x-fb-trace-id']);
    assert.equal(failed.headers['content-type'], 'application/json; charset=UTF-8');
    const unversioned = await h.call('GET', `/graph/${connection.phoneNumberId}`, undefined, connection.token);
    assertGraphError(unversioned, 400, 100);
    const unknownPath = await h.call('POST', `${V}/${connection.phoneNumberId}/no_such_edge`, {}, connection.token);
    assertGraphError(unknownPath, 400, 100);
    assertGraphError(await h.call('POST', `${V}/${connection.phoneNumberId}/messages`, '{not json', connection.token), 400, 100);
  });
});
