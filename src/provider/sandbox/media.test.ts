import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { DAY, MINUTE, SECOND } from '../../lib/clock.ts';
import { assertGraphError, messagesOf, sandboxStore, setup, statusesOf, V } from './harness.test.ts';

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(200, 7)]);

describe('the sandbox provider: media upload, lookup, download and delete', () => {
  it('an uploaded file gets a numeric id, is described with a 5-minute URL, and downloads byte for byte with the token', async (t) => {
    const { connect, upload, call } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const uploaded = await upload(token, phoneNumberId, { bytes: PNG, mime: 'image/png', filename: 'pic.png' });
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    assert.match(uploaded.body.id, /^\d+$/);
    assert.deepEqual(Object.keys(uploaded.body), ['id']);

    const node = await call('GET', `${V}/${uploaded.body.id}?phone_number_id=${phoneNumberId}`, undefined, token);
    assert.equal(node.status, 200);
    assert.deepEqual(Object.keys(node.body).sort(), ['file_size', 'id', 'messaging_product', 'mime_type', 'sha256', 'url']);
    assert.equal(node.body.messaging_product, 'whatsapp');
    assert.equal(node.body.mime_type, 'image/png');
    assert.equal(node.body.file_size, String(PNG.length));
    assert.equal(node.body.sha256, createHash('sha256').update(PNG).digest('hex'));
    assert.equal(node.body.id, uploaded.body.id);
    const url = new URL(node.body.url);
    assert.ok(url.pathname.startsWith('/sandbox/graph/'), `the URL is under the sandbox graph prefix: ${url.pathname}`);

    const download = await call('GET', node.body.url, undefined, token);
    assert.equal(download.status, 200);
    assert.equal(download.headers['content-type'], 'image/png');
    assert.equal(download.headers['content-disposition'], 'attachment; filename="pic.png"');
    assert.deepEqual(download.raw, PNG);
  });

  it('the download URL needs a token of the owning account and answers 404 once five minutes have passed', async (t) => {
    const { connect, upload, call, clock } = await setup(t);
    const owner = await connect();
    const stranger = await connect();
    const uploaded = await upload(owner.token, owner.phoneNumberId, { bytes: PNG, mime: 'image/png' });
    const { url } = (await call('GET', `${V}/${uploaded.body.id}`, undefined, owner.token)).body;

    assertGraphError(await call('GET', url), 401, 190);
    assertGraphError(await call('GET', url, undefined, 'not-a-token'), 401, 190);
    assertGraphError(await call('GET', url, undefined, stranger.token), 404, 100);
    const tampered = new URL(url);
    tampered.searchParams.set('ext', String(Number(tampered.searchParams.get('ext')) + 3600));
    assertGraphError(await call('GET', tampered.toString(), undefined, owner.token), 404, 100);

    clock.advance(5 * MINUTE - SECOND);
    assert.equal((await call('GET', url, undefined, owner.token)).status, 200);
    clock.advance(SECOND);
    assertGraphError(await call('GET', url, undefined, owner.token), 404, 100);

    const fresh = await call('GET', `${V}/${uploaded.body.id}`, undefined, owner.token);
    assert.notEqual(fresh.body.url, url);
    assert.equal((await call('GET', fresh.body.url, undefined, owner.token)).status, 200);
  });

  it("media is private to its account and number: another account's token or phone_number_id sees no such object", async (t) => {
    const { connect, upload, call } = await setup(t);
    const owner = await connect();
    const stranger = await connect();
    const uploaded = await upload(owner.token, owner.phoneNumberId, { bytes: PNG, mime: 'image/png' });
    assertGraphError(await call('GET', `${V}/${uploaded.body.id}`, undefined, stranger.token), 400, 100);
    assertGraphError(await call('GET', `${V}/${uploaded.body.id}?phone_number_id=${stranger.phoneNumberId}`, undefined, owner.token), 400, 100);
    assertGraphError(await call('DELETE', `${V}/${uploaded.body.id}`, undefined, stranger.token), 400, 100);
    assertGraphError(await upload(owner.token, stranger.phoneNumberId, { bytes: PNG, mime: 'image/png' }), 400, 100);
  });

  it('deleting media answers success; the id and its URL are gone afterwards', async (t) => {
    const { connect, upload, call } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const uploaded = await upload(token, phoneNumberId, { bytes: Buffer.from('hello'), mime: 'text/plain', filename: 'a.txt' });
    const { url } = (await call('GET', `${V}/${uploaded.body.id}`, undefined, token)).body;
    const deleted = await call('DELETE', `${V}/${uploaded.body.id}?phone_number_id=${phoneNumberId}`, undefined, token);
    assert.deepEqual(deleted.body, { success: true });
    assertGraphError(await call('GET', `${V}/${uploaded.body.id}`, undefined, token), 400, 100);
    assertGraphError(await call('GET', url, undefined, token), 404, 100);
    assertGraphError(await call('DELETE', `${V}/${uploaded.body.id}`, undefined, token), 400, 100);
  });

  it('a file one process stored is found, downloaded through the URL it signed, and deleted by another process on the same store', async (t) => {
    const store = await sandboxStore(t);
    const first = await setup(t, { store });
    const second = await setup(t, { store });
    const { token, phoneNumberId } = await first.connect();
    const uploaded = await first.upload(token, phoneNumberId, { bytes: PNG, mime: 'image/png', filename: 'pic.png' });
    const signedByFirst = new URL((await first.call('GET', `${V}/${uploaded.body.id}`, undefined, token)).body.url);
    assert.ok(signedByFirst.pathname.startsWith('/sandbox/'));

    const node = await second.call('GET', `${V}/${uploaded.body.id}?phone_number_id=${phoneNumberId}`, undefined, token);
    assert.equal(node.status, 200, JSON.stringify(node.body));
    assert.equal(node.body.sha256, createHash('sha256').update(PNG).digest('hex'));
    const download = await second.call('GET', `${second.base}${signedByFirst.pathname.slice('/sandbox'.length)}${signedByFirst.search}`, undefined, token);
    assert.equal(download.status, 200);
    assert.equal(download.headers['content-disposition'], 'attachment; filename="pic.png"');
    assert.deepEqual(download.raw, PNG);

    assert.deepEqual((await second.call('DELETE', `${V}/${uploaded.body.id}`, undefined, token)).body, { success: true });
    assertGraphError(await first.call('GET', `${V}/${uploaded.body.id}`, undefined, token), 400, 100);
    assertGraphError(await first.call('GET', signedByFirst.toString(), undefined, token), 404, 100);
  });

  it('uploaded media expire after 30 days', async (t) => {
    const { connect, upload, call, clock } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const uploaded = await upload(token, phoneNumberId, { bytes: PNG, mime: 'image/png' });
    clock.advance(30 * DAY - SECOND);
    assert.equal((await call('GET', `${V}/${uploaded.body.id}`, undefined, token)).status, 200);
    clock.advance(SECOND);
    assertGraphError(await call('GET', `${V}/${uploaded.body.id}`, undefined, token), 400, 100);
  });
});

describe('the sandbox provider: media upload errors', () => {
  it('a MIME type outside the provider list is refused with 131053 and says which types are accepted', async (t) => {
    const { connect, upload } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const gif = await upload(token, phoneNumberId, { bytes: Buffer.from('GIF89a'), mime: 'image/gif' });
    assertGraphError(gif, 400, 131053);
    assert.match(gif.body.error.error_data.details, /image\/gif/);
    assert.match(gif.body.error.error_data.details, /image\/jpeg/);
    const mismatch = await upload(token, phoneNumberId, { bytes: PNG, mime: 'image/png', type: 'image/jpeg' });
    assertGraphError(mismatch, 400, 131053);
    assertGraphError(await upload(token, phoneNumberId, { bytes: Buffer.alloc(0), mime: 'image/png' }), 400, 131053);
  });

  it('each kind has its decimal size limit: 5 MB images pass, one byte more is 131053; stickers stop at 500 KB', async (t) => {
    const { connect, upload } = await setup(t);
    const { token, phoneNumberId } = await connect();
    assert.equal((await upload(token, phoneNumberId, { bytes: Buffer.alloc(5_000_000, 1), mime: 'image/jpeg' })).status, 200);
    const tooBig = await upload(token, phoneNumberId, { bytes: Buffer.alloc(5_000_001, 1), mime: 'image/jpeg' });
    assertGraphError(tooBig, 400, 131053);
    assert.match(tooBig.body.error.error_data.details, /5000000 bytes/);
    assert.equal((await upload(token, phoneNumberId, { bytes: Buffer.alloc(500_000, 1), mime: 'image/webp' })).status, 200);
    assertGraphError(await upload(token, phoneNumberId, { bytes: Buffer.alloc(500_001, 1), mime: 'image/webp' }), 400, 131053);
    assert.equal((await upload(token, phoneNumberId, { bytes: Buffer.alloc(1000, 1), mime: 'audio/ogg', type: 'audio/ogg; codecs=opus' })).status, 200);
  });

  it('missing fields, a wrong messaging_product, a JSON body or a wrong token are refused in the Graph envelope', async (t) => {
    const { connect, upload, call } = await setup(t);
    const { token, phoneNumberId } = await connect();
    assertGraphError(await upload(token, phoneNumberId, { bytes: PNG, mime: 'image/png', type: null }), 400, 100);
    assertGraphError(await upload(token, phoneNumberId, { bytes: PNG, mime: 'image/png', product: null }), 400, 100);
    assertGraphError(await upload(token, phoneNumberId, { bytes: PNG, mime: 'image/png', product: 'sms' }), 400, 100);
    assertGraphError(await call('POST', `${V}/${phoneNumberId}/media`, { messaging_product: 'whatsapp', type: 'image/png' }, token), 400, 100);
    assertGraphError(await upload('not-a-token', phoneNumberId, { bytes: PNG, mime: 'image/png' }), 401, 190);
  });

  it('beyond the cap the oldest files are dropped; a file larger than the cap is refused', async (t) => {
    const { connect, upload, call, sandbox } = await setup(t, { mediaMaxTotalBytes: 1000 });
    const { token, phoneNumberId } = await connect();
    const first = await upload(token, phoneNumberId, { bytes: Buffer.alloc(600, 1), mime: 'image/png' });
    const second = await upload(token, phoneNumberId, { bytes: Buffer.alloc(600, 2), mime: 'image/png' });
    assertGraphError(await call('GET', `${V}/${first.body.id}`, undefined, token), 400, 100);
    assert.equal((await call('GET', `${V}/${second.body.id}`, undefined, token)).status, 200);
    assert.equal(await sandbox.media.totalBytes(), 600);
    assertGraphError(await upload(token, phoneNumberId, { bytes: Buffer.alloc(1001, 1), mime: 'image/png' }), 400, 131053);
  });

  it('expired files are dropped before the oldest live ones when a new file needs room', async (t) => {
    const { connect, upload, inbound, receiver, call, clock, sandbox } = await setup(t, { mediaMaxTotalBytes: 1000 });
    const { token, phoneNumberId } = await connect();
    const uploaded = await upload(token, phoneNumberId, { bytes: Buffer.alloc(400, 1), mime: 'image/png' });
    clock.advance(MINUTE);
    await inbound({
      phone_number_id: phoneNumberId,
      type: 'document',
      document: { mime_type: 'application/pdf', content_base64: Buffer.alloc(400, 2).toString('base64') },
    });
    const received = messagesOf(receiver.received)[0].document.id as string;
    clock.advance(7 * DAY);
    const newest = await upload(token, phoneNumberId, { bytes: Buffer.alloc(400, 3), mime: 'image/png' });
    assertGraphError(await call('GET', `${V}/${received}`, undefined, token), 400, 100);
    assert.equal((await call('GET', `${V}/${uploaded.body.id}`, undefined, token)).status, 200, 'the older upload is still within its 30 days');
    assert.equal((await call('GET', `${V}/${newest.body.id}`, undefined, token)).status, 200);
    assert.equal(await sandbox.media.totalBytes(), 800);
  });
});

describe('the sandbox provider: media in messages', () => {
  it('a media message by uploaded id walks normally; an unknown or mismatched id is accepted and then fails with 131053', async (t) => {
    const { connect, upload, inbound, send, sandbox, receiver } = await setup(t);
    const { token, phoneNumberId } = await connect();
    await inbound({ phone_number_id: phoneNumberId, type: 'text', text: 'hi' });
    const uploaded = await upload(token, phoneNumberId, { bytes: PNG, mime: 'image/png' });
    const good = await send(token, phoneNumberId, { type: 'image', image: { id: uploaded.body.id, caption: 'look' } });
    const unknown = await send(token, phoneNumberId, { type: 'image', image: { id: '999999999999999' } });
    const mismatched = await send(token, phoneNumberId, { type: 'audio', audio: { id: uploaded.body.id } });
    for (const answer of [good, unknown, mismatched]) assert.equal(answer.status, 200);
    await sandbox.idle();
    const statuses = statusesOf(receiver.received);
    assert.deepEqual(
      statuses.filter((s) => s.id === good.body.messages[0].id).map((s) => s.status),
      ['sent', 'delivered', 'read'],
    );
    for (const bad of [unknown, mismatched]) {
      const [failed, ...rest] = statuses.filter((s) => s.id === bad.body.messages[0].id);
      assert.equal(rest.length, 0);
      assert.equal(failed!.status, 'failed');
      assert.equal(failed!.errors![0]!.code, 131053);
    }
  });

  it('media a user sends is stored by the sandbox, so the id in the webhook can be looked up and downloaded', async (t) => {
    const { connect, inbound, receiver, call } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const bytes = Buffer.from('%PDF-1.4 a real-looking document');
    await inbound({
      phone_number_id: phoneNumberId,
      type: 'document',
      document: { mime_type: 'application/pdf', content_base64: bytes.toString('base64'), filename: 'invoice.pdf', caption: 'the invoice' },
    });
    await inbound({ phone_number_id: phoneNumberId, type: 'audio', audio: { voice: true } });
    await inbound({ phone_number_id: phoneNumberId, type: 'sticker', sticker: {} });
    const [document, audio, sticker] = messagesOf(receiver.received);
    assert.deepEqual(Object.keys(document.document).sort(), ['caption', 'filename', 'id', 'mime_type', 'sha256']);
    assert.equal(document.document.filename, 'invoice.pdf');
    assert.equal(document.document.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(audio.audio.voice, true);
    assert.equal(audio.audio.mime_type, 'audio/ogg; codecs=opus');
    assert.equal(sticker.sticker.mime_type, 'image/webp');
    assert.equal(sticker.sticker.animated, false);

    const node = await call('GET', `${V}/${document.document.id}`, undefined, token);
    assert.equal(node.body.mime_type, 'application/pdf');
    const download = await call('GET', node.body.url, undefined, token);
    assert.deepEqual(download.raw, bytes);
    const placeholder = await call('GET', (await call('GET', `${V}/${sticker.sticker.id}`, undefined, token)).body.url, undefined, token);
    assert.equal(placeholder.raw.subarray(0, 4).toString(), 'RIFF');
  });

  it('an inbound message can reference media uploaded to the account; unknown ids and wrong kinds are refused', async (t) => {
    const { connect, upload, inbound, receiver } = await setup(t);
    const { token, phoneNumberId } = await connect();
    const other = await connect();
    const uploaded = await upload(token, phoneNumberId, { bytes: PNG, mime: 'image/png' });
    assert.equal((await inbound({ phone_number_id: phoneNumberId, type: 'image', image: { id: uploaded.body.id } })).status, 200);
    assert.equal(messagesOf(receiver.received)[0].image.id, uploaded.body.id);
    assert.equal(messagesOf(receiver.received)[0].image.mime_type, 'image/png');
    assert.equal((await inbound({ phone_number_id: other.phoneNumberId, type: 'image', image: { id: uploaded.body.id } })).status, 404);
    assert.equal((await inbound({ phone_number_id: phoneNumberId, type: 'video', video: { id: uploaded.body.id } })).status, 400);
    assert.equal((await inbound({ phone_number_id: phoneNumberId, type: 'image', image: { mime_type: 'image/gif' } })).status, 400);
    assert.equal((await inbound({ phone_number_id: phoneNumberId, type: 'audio', audio: { caption: 'no captions on audio' } })).status, 400);
  });
});
