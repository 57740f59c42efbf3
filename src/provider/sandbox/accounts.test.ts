import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HOUR, MINUTE } from '../../lib/clock.ts';
import { APP_SECRET, assertGraphError, changesOf, setup, startReceiver, V, VERIFY_TOKEN } from './harness.test.ts';

describe('the sandbox provider: webhook subscriptions', () => {
  it('a new number is not subscribed: its webhooks are recorded as not sent until the app subscribes', async (t) => {
    const { connect, inbound, call, receiver } = await setup(t);
    const { token, phoneNumberId, wabaId } = await connect('any-code', { subscribe: false });
    assert.deepEqual((await call('GET', `${V}/${wabaId}/subscribed_apps`, undefined, token)).body, { data: [] });
    const unsent = await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'lost' });
    assert.equal(unsent.body.delivery.status, null);
    assert.match(unsent.body.delivery.error, /subscribed/);
    assert.equal(receiver.received.length, 0);

    assert.deepEqual((await call('POST', `${V}/${wabaId}/subscribed_apps`, undefined, token)).body, { success: true });
    const listed = await call('GET', `${V}/${wabaId}/subscribed_apps`, undefined, token);
    assert.equal(listed.body.data.length, 1);
    assert.equal(listed.body.data[0].whatsapp_business_api_data.id, 'app');
    assert.equal(typeof listed.body.data[0].whatsapp_business_api_data.name, 'string');
    const sent = await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'arrives' });
    assert.equal(sent.body.delivery.status, 200);
    assert.equal(receiver.received.length, 1);

    assert.deepEqual((await call('DELETE', `${V}/${wabaId}/subscribed_apps`, undefined, token)).body, { success: true });
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'lost again' });
    assert.equal(receiver.received.length, 1);
    const recorded = await call('GET', '/control/webhooks');
    assert.equal(recorded.body.data.length, 3);
    assert.equal(recorded.body.data[1].url, receiver.url);
  });

  it('an override callback is verified with the GET handshake, then receives that account’s webhooks', async (t) => {
    const { connect, inbound, call, receiver } = await setup(t);
    const other = await startReceiver(t);
    const { token, phoneNumberId, wabaId } = await connect('any-code', { subscribe: false });
    const refused = await call('POST', `${V}/${wabaId}/subscribed_apps`, { override_callback_uri: other.url, verify_token: 'wrong' }, token);
    assertGraphError(refused, 400, 100);
    assertGraphError(await call('POST', `${V}/${wabaId}/subscribed_apps`, { override_callback_uri: other.url }, token), 400, 100);
    assertGraphError(await call('POST', `${V}/${wabaId}/subscribed_apps`, { override_callback_uri: 'ftp://x', verify_token: VERIFY_TOKEN }, token), 400, 100);

    const accepted = await call('POST', `${V}/${wabaId}/subscribed_apps`, { override_callback_uri: other.url, verify_token: VERIFY_TOKEN }, token);
    assert.deepEqual(accepted.body, { success: true });
    assert.equal((await call('GET', `${V}/${wabaId}/subscribed_apps`, undefined, token)).body.data[0].override_callback_uri, other.url);
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'to the override' });
    assert.equal(other.received.length, 1);
    assert.equal(receiver.received.length, 0);
  });

  it("subscribing another account's WABA is an unknown object", async (t) => {
    const { connect, call } = await setup(t);
    const owner = await connect('a', { subscribe: false });
    const stranger = await connect('b', { subscribe: false });
    assertGraphError(await call('POST', `${V}/${owner.wabaId}/subscribed_apps`, undefined, stranger.token), 400, 100);
    assertGraphError(await call('GET', `${V}/${owner.wabaId}/subscribed_apps`, undefined, stranger.token), 400, 100);
  });
});

describe('the sandbox provider: registration', () => {
  it('a Cloud API number registers with a six-digit PIN; other PINs and products are refused', async (t) => {
    const { connect, call } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const register = (body: unknown) => call('POST', `${V}/${phoneNumberId}/register`, body, token);
    assertGraphError(await register({ messaging_product: 'whatsapp', pin: '12345' }), 400, 100);
    assertGraphError(await register({ messaging_product: 'whatsapp', pin: 123456 }), 400, 100);
    assertGraphError(await register({ messaging_product: 'whatsapp' }), 400, 100);
    assertGraphError(await register({ pin: '123456' }), 400, 100);
    assert.equal((await call('GET', `${V}/${phoneNumberId}?fields=is_pin_enabled`, undefined, token)).body.is_pin_enabled, false);
    assert.deepEqual((await register({ messaging_product: 'whatsapp', pin: '123456' })).body, { success: true });
    assert.equal((await call('GET', `${V}/${phoneNumberId}?fields=is_pin_enabled`, undefined, token)).body.is_pin_enabled, true);
  });

  it('a form-encoded body is read as Graph reads it', async (t) => {
    const { connect, call } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const answer = await call('POST', `${V}/${phoneNumberId}/register`, 'messaging_product=whatsapp&pin=654321', token, {
      'content-type': 'application/x-www-form-urlencoded',
    });
    assert.deepEqual(answer.body, { success: true });
  });

  it('more than ten register attempts in 72 hours are refused with 133016, and allowed again later', async (t) => {
    const { connect, call, clock } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const register = () => call('POST', `${V}/${phoneNumberId}/register`, { messaging_product: 'whatsapp', pin: '123456' }, token);
    assertGraphError(await call('POST', `${V}/${phoneNumberId}/register`, { messaging_product: 'whatsapp', pin: '1' }, token), 400, 100);
    for (let attempt = 0; attempt < 10; attempt += 1) assert.equal((await register()).status, 200, 'the malformed request did not count');
    assertGraphError(await register(), 400, 133016);
    clock.advance(72 * HOUR);
    assert.equal((await register()).status, 200);
  });
});

describe('the sandbox provider: coexistence numbers', () => {
  it('a code starting with "coexistence" onboards a business-app number: on the app, 20 mps, no /register', async (t) => {
    const { connect, call } = await setup(t);
    const { token, phoneNumberId } = await connect('coexistence-signup');
    const node = await call('GET', `${V}/${phoneNumberId}`, undefined, token);
    assert.equal(node.body.is_on_biz_app, true);
    assert.deepEqual(node.body.throughput, { level: 'STANDARD' });
    assert.match(node.body.last_onboarded_time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/);
    assertGraphError(await call('POST', `${V}/${phoneNumberId}/register`, { messaging_product: 'whatsapp', pin: '123456' }, token), 400, 100);
    const cloud = await connect('plain-code');
    assert.equal((await call('GET', `${V}/${cloud.phoneNumberId}`, undefined, cloud.token)).body.is_on_biz_app, false);
    const numbers = (await call('GET', '/control/numbers')).body.data;
    assert.deepEqual(
      numbers.map((number: any) => number.coexistence),
      [true, false],
    );
  });

  it('smb_app_data answers a request id once per sync type, within 24 hours of onboarding', async (t) => {
    const { connect, call, clock } = await setup(t);
    const coexistence = await connect('coexistence');
    const sync = (connection: { token: string; phoneNumberId: string }, body: Record<string, unknown>) =>
      call('POST', `${V}/${connection.phoneNumberId}/smb_app_data`, { messaging_product: 'whatsapp', ...body }, connection.token);

    const contacts = await sync(coexistence, { sync_type: 'smb_app_state_sync' });
    assert.equal(contacts.status, 200);
    assert.equal(contacts.body.messaging_product, 'whatsapp');
    assert.match(contacts.body.request_id, /^[0-9a-f]{32}$/);
    assertGraphError(await sync(coexistence, { sync_type: 'smb_app_state_sync' }), 400, 2593107);
    assertGraphError(await sync(coexistence, { sync_type: 'everything' }), 400, 100);
    assertGraphError(await sync(coexistence, {}), 400, 100);

    clock.advance(24 * HOUR + MINUTE);
    assertGraphError(await sync(coexistence, { sync_type: 'history' }), 400, 2593108);
    const late = await connect('coexistence-2');
    assert.equal((await sync(late, { sync_type: 'history' })).status, 200);

    const cloud = await connect('plain');
    const refused = await sync(cloud, { sync_type: 'history' });
    assertGraphError(refused, 400, 100);
    assert.match(refused.body.error.error_data.details, /coexistence/);
  });
});

describe('the sandbox provider: tokens and re-authorisation', () => {
  it('a revoked token is refused with 190 (HTTP 401, subcode 458); a minted code re-authorises the same number', async (t) => {
    const { connect, call, control, sendText, inbound } = await setup(t);
    const original = await connect();
    await inbound({ phone_number_id: original.phoneNumberId, type: 'text', text: 'hi' });
    assert.deepEqual(await control('/revoke-token', { access_token: original.token }), { revoked: 1 });
    const refused = await sendText(original.token, original.phoneNumberId);
    assertGraphError(refused, 401, 190);
    assert.equal(refused.body.error.error_subcode, 458);
    const debug = await call('GET', `${V}/debug_token?input_token=${original.token}`, undefined, original.token);
    assertGraphError(debug, 401, 190);

    const minted = await control(`/numbers/${original.phoneNumberId}/code`);
    assert.equal(minted.phone_number_id, original.phoneNumberId);
    const exchanged = await call('GET', `${V}/oauth/access_token?client_id=app&client_secret=${APP_SECRET}&code=${minted.code}`);
    assert.equal(exchanged.body.sandbox.phone_number_id, original.phoneNumberId);
    assert.equal(exchanged.body.sandbox.waba_id, original.wabaId);
    assert.notEqual(exchanged.body.access_token, original.token);
    assert.equal((await sendText(exchanged.body.access_token, original.phoneNumberId)).status, 200, 'window and state survive re-authorisation');
    assert.equal((await call('GET', '/control/numbers')).body.data.length, 1, 'no new number was created');

    const reused = await call('GET', `${V}/oauth/access_token?client_id=app&client_secret=${APP_SECRET}&code=${minted.code}`);
    assertGraphError(reused, 400, 100);
    assert.equal(reused.body.error.error_subcode, 36009);
  });

  it('revoking by account revokes all its tokens; unknown tokens and accounts are 404', async (t) => {
    const { connect, call, control, sendText } = await setup(t);
    const first = await connect();
    const minted = await control(`/numbers/${first.phoneNumberId}/code`);
    const second = (await call('GET', `${V}/oauth/access_token?client_id=app&client_secret=${APP_SECRET}&code=${minted.code}`)).body.access_token as string;
    assert.deepEqual(await control('/revoke-token', { waba_id: first.wabaId }), { revoked: 2 });
    assertGraphError(await sendText(second, first.phoneNumberId), 401, 190);
    assert.equal((await call('POST', '/control/revoke-token', { access_token: 'nope' })).status, 404);
    assert.equal((await call('POST', '/control/revoke-token', { waba_id: '1' })).status, 404);
    assert.equal((await call('POST', '/control/revoke-token', {})).status, 400);
    assert.equal((await call('POST', '/control/numbers/1/code')).status, 404);
  });

  it('an account update that ends the partnership is notified, then revokes the tokens and the subscription', async (t) => {
    const { connect, control, sendText, receiver } = await setup(t);
    const { token, phoneNumberId, wabaId } = await connect();
    const answer = await control('/account-update', { waba_id: wabaId, event: 'PARTNER_APP_UNINSTALLED' });
    assert.equal(answer.delivery.status, 200);
    assert.equal(answer.tokens_revoked, 1);
    const [change] = changesOf(receiver.received, 'account_update');
    assert.equal(change!.value.event, 'PARTNER_APP_UNINSTALLED');
    assert.equal(change!.value.waba_info.waba_id, wabaId);
    assertGraphError(await sendText(token, phoneNumberId), 401, 190);
  });
});
