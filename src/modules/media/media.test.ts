import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { get as httpGet, type IncomingMessage } from 'node:http';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { before, describe, it } from 'node:test';
import { DAY, HOUR, MINUTE } from '../../lib/clock.ts';
import type { Principal } from '../credentials/principal.ts';
import { startServer, suiteScope, type Scope, type TestServer } from '../../../test/harness.ts';
import { assertError, createConnection, createKey, inbound, settle, signUp, type SignedUp, startServerWithOwner } from '../../../test/factories.ts';
import { startLocalS3, type LocalS3 } from '../../../test/local-s3.ts';
import { waitFor } from '../../../test/wait.ts';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The first bytes of each accepted format, so that the signature checks agree with the MIME type. */
const SIGNATURES: Record<string, Buffer> = {
  'image/png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]),
  'image/jpeg': Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00]),
  'video/mp4': Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42')]),
  'audio/ogg': Buffer.from('OggS\0\x02'),
  'application/pdf': Buffer.from('%PDF-1.4\n'),
  'text/plain': Buffer.from('Opening hours: nine to five.\n'),
  'image/webp': Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x1a, 0, 0, 0]), Buffer.from('WEBPVP8 ')]),
};

/** A file of that type, `size` bytes long (random after the signature; text stays text). */
function sample(mimeType: string, size = 300): Buffer {
  const head = SIGNATURES[mimeType]!;
  const rest = mimeType === 'text/plain' ? Buffer.alloc(Math.max(0, size - head.length), 'a') : randomBytes(Math.max(0, size - head.length));
  return Buffer.concat([head, rest]).subarray(0, size);
}

type FilePart = { bytes: Buffer; type: string; filename?: string };
type Part = [name: string, value: string | FilePart];

interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/**
 * A server with an owner and a connected number, and the calls every suite makes; `environment`
 * adds configuration made in the suite's scope (a bucket to store the media in).
 */
function mediaSuite(environment: (scope: Scope) => Promise<Record<string, string>> = async () => ({})) {
  const ctx = {} as {
    server: TestServer;
    owner: SignedUp;
    /** The credential the helpers use by default. */
    token: string;
    connection: { id: string; phone_number_id: string; waba_id: string };
  };
  const suite = suiteScope();
  before(async () => {
    ({ server: ctx.server, owner: ctx.owner } = await startServerWithOwner(suite, { env: await environment(suite) }));
    ctx.token = ctx.owner.token;
    ctx.connection = await createConnection(ctx.server, ctx.owner);
  });

  async function post(token: string | undefined, body: FormData | string, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await fetch(`${ctx.server.url}/v1/media`, {
      method: 'POST',
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      body,
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      text,
      body: (response.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : undefined,
    };
  }
  function form(parts: Part[]): FormData {
    const data = new FormData();
    for (const [name, value] of parts) {
      if (typeof value === 'string') data.append(name, value);
      else data.append(name, new Blob([new Uint8Array(value.bytes)], { type: value.type }), value.filename ?? 'file.bin');
    }
    return data;
  }
  const upload = (parts: Part[], token = ctx.token, headers: Record<string, string> = {}) => post(token, form(parts), headers);
  async function uploaded(file: FilePart, fields: Part[] = [], token = ctx.token): Promise<Record<string, any> & { id: string }> {
    const response = await upload([...fields, ['file', file]], token);
    assert.equal(response.status, 201, response.text);
    return response.body;
  }
  /**
   * Downloads without keep-alive: a client may hold every byte (Content-Length) a moment before the
   * server ends the response, and a connection kept alive past that moment would hold up closing.
   */
  async function download(id: string, token = ctx.token, headers: Record<string, string> = {}) {
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      httpGet(`${ctx.server.url}/v1/media/${id}/download`, { agent: false, headers: { authorization: `Bearer ${token}`, ...headers } }, resolve).on(
        'error',
        reject,
      );
    });
    const bytes = await buffer(response);
    const text = bytes.toString('utf8');
    const responseHeaders = new Headers(Object.entries(response.headers).map(([name, value]) => [name, String(value)] as [string, string]));
    return {
      status: response.statusCode!,
      headers: responseHeaders,
      bytes,
      text,
      body: (response.headers['content-type'] ?? '').includes('json') ? JSON.parse(text) : undefined,
    };
  }
  /**
   * Every file in the media storage, once each belongs to a media: an unused upload's bytes are
   * dropped just after its response, and a partial file is gone once its upload ends.
   */
  async function storedFiles(): Promise<string[]> {
    const root = path.join(ctx.server.config.dataDir, 'media');
    const list = () =>
      readdirSync(root, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
    await waitFor(
      async () => {
        const kept = new Set((await ctx.server.app.store.db.selectFrom('media').select('storage_key').execute()).map((row) => row.storage_key));
        return list().every((file) => kept.has(path.basename(file)));
      },
      { message: 'the bytes of unused uploads to be dropped' },
    );
    return list();
  }
  const get = async (id: string) => (await ctx.server.request('GET', `/v1/media/${id}`, { token: ctx.token })).body;
  const mediaRows = (organizationId: string) => ctx.server.app.store.db.selectFrom('media').selectAll().where('organization_id', '=', organizationId).execute();
  const service = () => ctx.server.app.services.media;
  return { ctx, post, form, upload, uploaded, download, storedFiles, get, mediaRows, service };
}

describe('media: the API', () => {
  const { ctx, post, form, upload, uploaded, download, storedFiles, mediaRows } = mediaSuite();
  let server: TestServer;
  let owner: SignedUp;
  let connection: { id: string; phone_number_id: string; waba_id: string };
  before(() => ({ server, owner, connection } = ctx));

  describe('upload, get, download', () => {
    it('each kind uploads and answers 201 with the media, its kind following from the MIME type', async () => {
      const kinds: Record<string, string> = {
        'image/png': 'image',
        'image/jpeg': 'image',
        'video/mp4': 'video',
        'audio/ogg': 'audio',
        'application/pdf': 'document',
        'text/plain': 'document',
        'image/webp': 'sticker',
      };
      for (const [mimeType, kind] of Object.entries(kinds)) {
        const bytes = sample(mimeType);
        const media = await uploaded({ bytes, type: mimeType, filename: `sample.${kind}` });
        assert.match(media.id, /^med_[0-9A-HJKMNP-TV-Z]{26}$/);
        assert.deepEqual(
          { ...media, id: undefined },
          {
            id: undefined,
            object: 'media',
            kind,
            mime_type: mimeType,
            size: bytes.length,
            sha256: sha256(bytes),
            filename: `sample.${kind}`,
            connection_id: null,
            source: 'upload',
            status: 'ready',
            failure_reason: null,
            metadata: {},
            created_at: '2026-06-01T12:00:00.000Z',
            updated_at: '2026-06-01T12:00:00.000Z',
          },
          mimeType,
        );
      }
    });

    it('get answers the media as the upload did', async () => {
      const media = await uploaded({ bytes: sample('image/png'), type: 'image/png' }, [['metadata', JSON.stringify({ campaign: 'june' })]]);
      assert.deepEqual(media.metadata, { campaign: 'june' });
      const response = await server.request('GET', `/v1/media/${media.id}`, { token: owner.token });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(response.body, media);
      const audit = await server.request('GET', `/v1/events?target_id=${media.id}`, { token: owner.token });
      assert.deepEqual(
        audit.body.data.map((event: { action: string; data: unknown }) => [event.action, event.data]),
        [['media.uploaded', { kind: 'image', mime_type: 'image/png', size: 300 }]],
      );
    });

    it('download streams the same bytes with their type, length, a safe disposition and the SHA-256 as ETag', async () => {
      const bytes = sample('application/pdf', 20_000);
      const media = await uploaded({ bytes, type: 'application/pdf', filename: 'Carte d’été 100%.pdf' });
      const response = await download(media.id);
      assert.equal(response.status, 200);
      assert.ok(response.bytes.equals(bytes), 'the bytes are the ones uploaded');
      assert.equal(response.headers.get('content-type'), 'application/pdf');
      assert.equal(response.headers.get('content-length'), String(bytes.length));
      assert.equal(response.headers.get('etag'), `"${sha256(bytes)}"`);
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(
        response.headers.get('content-disposition'),
        `attachment; filename="Carte d__t_ 100_.pdf"; filename*=UTF-8''Carte%20d%E2%80%99%C3%A9t%C3%A9%20100%25.pdf`,
      );
    });

    it('a download with a current If-None-Match answers 304 without the bytes', async () => {
      const media = await uploaded({ bytes: sample('image/jpeg'), type: 'image/jpeg' });
      const response = await download(media.id, owner.token, { 'if-none-match': `"${media.sha256}"` });
      assert.equal(response.status, 304);
      assert.equal(response.bytes.length, 0);
    });

    it('a file name is kept without its path or control characters; no name gives the id as download name', async () => {
      const media = await uploaded({ bytes: sample('text/plain'), type: 'text/plain', filename: '../../etc/pass\u0001wd.txt' });
      assert.equal(media.filename, 'passwd.txt');
      const unnamed = await upload([['file', { bytes: sample('text/plain'), type: 'text/plain', filename: '' }]]);
      assert.equal(unnamed.status, 201, unnamed.text);
      assert.equal(unnamed.body.filename, null);
      assert.equal(
        (await download(unnamed.body.id)).headers.get('content-disposition'),
        `attachment; filename="${unnamed.body.id}"; filename*=UTF-8''${unnamed.body.id}`,
      );
    });

    it('`type` names the MIME type of a file part sent as application/octet-stream', async () => {
      const media = await uploaded({ bytes: sample('audio/ogg'), type: '' }, [['type', 'audio/ogg; codecs=opus']]);
      assert.equal(media.kind, 'audio');
      assert.equal(media.mime_type, 'audio/ogg');
    });

    it('a document far above the 1 MiB JSON body limit is accepted', async () => {
      const bytes = sample('application/pdf', 6_000_000);
      const media = await uploaded({ bytes, type: 'application/pdf' });
      assert.equal(media.size, 6_000_000);
      assert.ok((await download(media.id)).bytes.equals(bytes));
    });

    it('the bytes are kept under DATA_DIR/media, one file per media, nothing left in tmp/', async () => {
      const media = await uploaded({ bytes: sample('image/png'), type: 'image/png' });
      const files = await storedFiles();
      assert.ok(files.includes(path.join(media.id.slice(-2), media.id)), `stored as <last two characters>/<id>: ${files.join(', ')}`);
      assert.ok(
        files.every((file) => !file.startsWith('tmp')),
        'no partial file stays behind',
      );
    });
  });

  describe('refused uploads', () => {
    it('a type the provider does not take is 415 media_type_unsupported on /file', async () => {
      const error = assertError(await upload([['file', { bytes: Buffer.from('GIF89a........'), type: 'image/gif' }]]), 415, 'media_type_unsupported');
      assert.equal(error.param, '/file');
      assert.match(error.message, /image\/gif.*image: image\/jpeg, image\/png/);
    });

    it('a file over its kind’s limit is 413 media_too_large on /file (stickers 500 KB, images 5 MB)', async () => {
      const sticker = assertError(await upload([['file', { bytes: sample('image/webp', 500_001), type: 'image/webp' }]]), 413, 'media_too_large');
      assert.equal(sticker.param, '/file');
      assert.match(sticker.message, /sticker media may be at most 500000 bytes/);
      assert.equal((await upload([['file', { bytes: sample('image/webp', 500_000), type: 'image/webp' }]])).status, 201, 'exactly the limit is accepted');
      assertError(await upload([['file', { bytes: sample('image/png', 5_000_001), type: 'image/png' }]]), 413, 'media_too_large');
    });

    it('bytes that contradict the declared type are 415, naming what they look like', async () => {
      const error = assertError(await upload([['file', { bytes: sample('image/png'), type: 'application/pdf' }]]), 415, 'media_type_unsupported');
      assert.equal(error.param, '/file');
      assert.match(error.message, /not application\/pdf; they look like image\/png/);
      assertError(await upload([['file', { bytes: Buffer.from('plain\0binary'), type: 'text/plain' }]]), 415, 'media_type_unsupported');
      assertError(await upload([['file', { bytes: sample('application/pdf'), type: 'text/plain' }]]), 415, 'media_type_unsupported');
    });

    it('a file part whose Content-Type contradicts `type` is 415 on /type', async () => {
      const error = assertError(
        await upload([
          ['type', 'image/png'],
          ['file', { bytes: sample('image/jpeg'), type: 'image/jpeg' }],
        ]),
        415,
        'media_type_unsupported',
      );
      assert.equal(error.param, '/type');
    });

    it('an empty file is validation_failed on /file', async () => {
      const error = assertError(await upload([['file', { bytes: Buffer.alloc(0), type: 'text/plain' }]]), 400, 'validation_failed');
      assert.equal(error.param, '/file');
      assert.equal(error.details[0].code, 'too_short');
    });

    it('a form without a file part is validation_failed on /file', async () => {
      const error = assertError(await upload([['type', 'image/png']]), 400, 'validation_failed');
      assert.equal(error.param, '/file');
      assert.equal(error.details[0].code, 'missing');
    });

    it('unknown fields, fields after the file, repeated fields and a second file are validation_failed', async () => {
      const file: FilePart = { bytes: sample('image/png'), type: 'image/png' };
      const unknown = assertError(
        await upload([
          ['colour', 'blue'],
          ['file', file],
        ]),
        400,
        'validation_failed',
      );
      assert.equal(unknown.param, '/colour');
      assert.equal(unknown.details[0].code, 'unknown_field');
      assert.equal(
        assertError(
          await upload([
            ['file', file],
            ['metadata', '{}'],
          ]),
          400,
          'validation_failed',
        ).param,
        '/metadata',
      );
      assert.equal(
        assertError(
          await upload([
            ['type', 'image/png'],
            ['type', 'image/png'],
            ['file', file],
          ]),
          400,
          'validation_failed',
        ).details[0].code,
        'duplicate',
      );
      assert.equal(
        assertError(
          await upload([
            ['file', file],
            ['file', file],
          ]),
          400,
          'validation_failed',
        ).param,
        '/file',
      );
      assert.equal(assertError(await upload([['photo', file]]), 400, 'validation_failed').param, '/photo');
    });

    it('metadata must be a JSON object within the metadata bounds', async () => {
      const file: FilePart = { bytes: sample('image/png'), type: 'image/png' };
      assert.equal(
        assertError(
          await upload([
            ['metadata', 'not json'],
            ['file', file],
          ]),
          400,
          'validation_failed',
        ).param,
        '/metadata',
      );
      assert.equal(
        assertError(
          await upload([
            ['metadata', '[1, 2]'],
            ['file', file],
          ]),
          400,
          'validation_failed',
        ).param,
        '/metadata',
      );
      const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]));
      assert.equal(
        assertError(
          await upload([
            ['metadata', JSON.stringify(tooMany)],
            ['file', file],
          ]),
          400,
          'validation_failed',
        ).param,
        '/metadata',
      );
    });

    it('a body that is not multipart is 415 unsupported_content_type, whatever it holds', async () => {
      assertError(await post(owner.token, JSON.stringify({ file: 'x' }), { 'content-type': 'application/json' }), 415, 'unsupported_content_type');
      assertError(await post(owner.token, '{not json', { 'content-type': 'application/json' }), 415, 'unsupported_content_type');
      assertError(await post(owner.token, 'hello', { 'content-type': 'text/plain' }), 415, 'unsupported_content_type');
      const bare = await fetch(`${server.url}/v1/media`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` } });
      assertError({ status: bare.status, headers: bare.headers, text: '', body: await bare.json() }, 415, 'unsupported_content_type');
    });

    it('a malformed multipart body is validation_failed, never a 500', async () => {
      const noBoundary = await post(owner.token, 'garbage', { 'content-type': 'multipart/form-data' });
      assertError(noBoundary, 400, 'validation_failed');
      const truncated =
        '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n\0\0\0\rIHDR';
      assertError(await post(owner.token, truncated, { 'content-type': 'multipart/form-data; boundary=xyz' }), 400, 'validation_failed');
      assertError(await post(owner.token, '--xyz\r\nnonsense\r\n--xyz--', { 'content-type': 'multipart/form-data; boundary=xyz' }), 400, 'validation_failed');
    });

    it('a refused upload leaves no bytes behind and no media', async () => {
      const { organizationId, token } = await signUp(server);
      const before = (await storedFiles()).length;
      assertError(await upload([['file', { bytes: sample('image/png', 5_000_001), type: 'image/png' }]], token), 413, 'media_too_large');
      assertError(
        await upload(
          [
            ['file', { bytes: sample('image/png'), type: 'image/png' }],
            ['type', 'image/png'],
          ],
          token,
        ),
        400,
        'validation_failed',
      );
      assertError(
        await upload(
          [
            ['metadata', '[]'],
            ['file', { bytes: sample('image/png'), type: 'image/png' }],
          ],
          token,
        ),
        400,
        'validation_failed',
      );
      assert.equal((await storedFiles()).length, before);
      assert.deepEqual(await mediaRows(organizationId), []);
    });
  });

  describe('idempotency', () => {
    it('the same key with the same file replays the first media and keeps one copy of the bytes', async () => {
      const { organizationId, token } = await signUp(server);
      const file: FilePart = { bytes: sample('image/png'), type: 'image/png' };
      const first = await upload([['file', file]], token, { 'idempotency-key': 'upload-1' });
      assert.equal(first.status, 201, first.text);
      const before = (await storedFiles()).length;
      const again = await upload([['file', file]], token, { 'idempotency-key': 'upload-1' });
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.deepEqual(again.body, first.body);
      assert.equal((await storedFiles()).length, before, 'the replayed request’s bytes were dropped');
      assert.equal((await mediaRows(organizationId)).length, 1);
    });

    it('the same key with another file is idempotency_key_reuse', async () => {
      const { token } = await signUp(server);
      assert.equal((await upload([['file', { bytes: sample('image/png'), type: 'image/png' }]], token, { 'idempotency-key': 'upload-2' })).status, 201);
      assertError(
        await upload([['file', { bytes: sample('image/png'), type: 'image/png' }]], token, { 'idempotency-key': 'upload-2' }),
        422,
        'idempotency_key_reuse',
      );
    });
  });

  describe('access', () => {
    it("another organization's media is 404 on get and download", async () => {
      const media = await uploaded({ bytes: sample('image/png'), type: 'image/png' });
      const stranger = await signUp(server);
      assertError(await server.request('GET', `/v1/media/${media.id}`, { token: stranger.token }), 404, 'resource_not_found');
      const response = await download(media.id, stranger.token);
      assertError(response, 404, 'resource_not_found');
    });

    it('an unknown or malformed id is 404 or validation_failed on /path/id', async () => {
      assertError(await server.request('GET', '/v1/media/med_01J00000000000000000000000', { token: owner.token }), 404, 'resource_not_found');
      assert.equal(
        assertError(await server.request('GET', '/v1/media/ct_01J00000000000000000000000', { token: owner.token }), 400, 'validation_failed').param,
        '/path/id',
      );
    });

    it('uploading takes messages:write and reading takes messages:read', async () => {
      const readOnly = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['messages:read'] });
      const writeOnly = await createKey(server, owner.token, { kind: 'organization', mode: 'live', scopes: ['messages:write'] });
      const file: FilePart = { bytes: sample('image/png'), type: 'image/png' };
      assert.equal(assertError(await upload([['file', file]], readOnly.key), 403, 'scope_missing').required_scope, 'messages:write');
      const media = await uploaded(file, [], writeOnly.key);
      assertError(await server.request('GET', `/v1/media/${media.id}`, { token: writeOnly.key }), 403, 'scope_missing');
      assertError(await download(media.id, writeOnly.key), 403, 'scope_missing');
      assert.equal((await download(media.id, readOnly.key)).status, 200);
    });

    it('credentials are checked before the body is read', async () => {
      assertError(await post(undefined, form([['file', { bytes: sample('image/png'), type: 'image/png' }]])), 401, 'credential_missing');
    });

    it("a connection key's uploads belong to its number: other connection keys cannot see them, organization keys can", async () => {
      const other = await createConnection(server, owner, { name: 'Sales line' });
      const mine = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
      const theirs = await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: other.id });
      const media = await uploaded({ bytes: sample('image/png'), type: 'image/png' }, [], mine.key);
      assert.equal(media.connection_id, connection.id);
      assertError(await server.request('GET', `/v1/media/${media.id}`, { token: theirs.key }), 404, 'resource_not_found');
      assert.equal((await server.request('GET', `/v1/media/${media.id}`, { token: owner.token })).status, 200);
      const shared = await uploaded({ bytes: sample('image/png'), type: 'image/png' });
      assert.equal(
        (await server.request('GET', `/v1/media/${shared.id}`, { token: theirs.key })).status,
        200,
        "the organization's own uploads are every key's",
      );
    });
  });
});

/**
 * Provider ids expire and fetches are retried over hours: these suites move the clock, so they call
 * with an organization key (a dashboard token lives 15 minutes) and make every key up front.
 */
describe('media: sending and receiving', () => {
  const { ctx, uploaded, download, storedFiles, get, service } = mediaSuite();
  let server: TestServer;
  let owner: SignedUp;
  let connection: { id: string; phone_number_id: string; waba_id: string };
  let other: { id: string; phone_number_id: string; waba_id: string };
  let otherKey: string;
  let testKey: string;
  before(async () => {
    ({ server, owner, connection } = ctx);
    ctx.token = (await createKey(server, owner.token, { kind: 'organization', mode: 'live' })).key;
    other = await createConnection(server, owner, { name: 'Billing line' });
    otherKey = (await createKey(server, owner.token, { kind: 'connection', mode: 'live', connection_id: other.id })).key;
    testKey = (await createKey(server, owner.token, { kind: 'organization', mode: 'test' })).key;
  });

  describe('for the send pipeline', () => {
    const credentialsOf = async (organizationId: string, connectionId: string) => {
      const principal: Principal = {
        kind: 'organization_key',
        credentialId: 'key_test',
        organizationId,
        memberId: null,
        role: null,
        mode: null,
        connectionId: null,
        scopes: new Set(),
      };
      return (await server.app.services.connections.providerAccess(principal, connectionId)).credentials;
    };

    it('assertUsable accepts a ready media of the right kind', async () => {
      const media = await uploaded({ bytes: sample('image/webp'), type: 'image/webp' });
      await service().assertUsable(server.app.store.db, owner.organizationId, media.id, 'sticker', '/sticker/media_id');
    });

    it("assertUsable refuses another organization's media, another kind and media still being fetched, naming the param", async () => {
      const db = server.app.store.db;
      const image = await uploaded({ bytes: sample('image/png'), type: 'image/png' });
      const stranger = await signUp(server);
      await assert.rejects(service().assertUsable(db, stranger.organizationId, image.id, 'image', '/image/media_id'), {
        code: 'resource_not_found',
        param: '/image/media_id',
      });
      await assert.rejects(service().assertUsable(db, owner.organizationId, image.id, 'document', '/document/media_id'), {
        code: 'media_type_unsupported',
        param: '/document/media_id',
      });
      await assert.rejects(service().assertUsable(db, owner.organizationId, image.id, 'sticker', '/sticker/media_id'), { code: 'media_type_unsupported' });
      const pending = await db.transaction().execute((trx) =>
        service().adoptInbound(trx, {
          organizationId: owner.organizationId,
          connectionId: connection.id,
          providerMediaId: `never-${randomBytes(4).toString('hex')}`,
          mimeType: 'image/jpeg',
          sha256: undefined,
          filename: undefined,
        }),
      );
      await assert.rejects(service().assertUsable(db, owner.organizationId, pending, 'image', '/image/media_id'), {
        code: 'invalid_state',
        param: '/image/media_id',
      });
      assertError(await download(pending), 409, 'invalid_state');
    });

    it('providerSourceFor uploads the bytes to the number once, reuses the id, and uploads again before the provider forgets it', async () => {
      const bytes = sample('image/jpeg', 4_000);
      const media = await uploaded({ bytes, type: 'image/jpeg', filename: 'menu.jpg' });
      const target = { id: connection.id, credentials: await credentialsOf(owner.organizationId, connection.id) };
      const first = await service().providerSourceFor(owner.organizationId, media.id, target);
      assert.ok('id' in first);
      const held = await server.app.sandbox!.media.find(first.id);
      assert.ok(held, 'the sandbox holds the upload');
      assert.ok(held.bytes.equals(bytes), 'with the bytes stored');
      assert.equal(held.mimeType, 'image/jpeg');
      assert.equal(held.phoneNumberId, connection.phone_number_id);

      server.clock.advance(28 * DAY);
      assert.deepEqual(await service().providerSourceFor(owner.organizationId, media.id, target), first, 'reused within its life');

      server.clock.advance(DAY + MINUTE);
      const renewed = await service().providerSourceFor(owner.organizationId, media.id, target);
      assert.ok('id' in renewed);
      assert.notEqual(renewed.id, first.id, 'a day before the 30 days run out, the bytes are uploaded again');
      assert.ok((await server.app.sandbox!.media.find(renewed.id))?.bytes.equals(bytes));
      assert.deepEqual(await service().providerSourceFor(owner.organizationId, media.id, target), renewed);
    });

    it('providerSourceFor uploads separately for each sending number', async () => {
      const media = await uploaded({ bytes: sample('application/pdf'), type: 'application/pdf' });
      const a = await service().providerSourceFor(owner.organizationId, media.id, {
        id: connection.id,
        credentials: await credentialsOf(owner.organizationId, connection.id),
      });
      const b = await service().providerSourceFor(owner.organizationId, media.id, {
        id: other.id,
        credentials: await credentialsOf(owner.organizationId, other.id),
      });
      assert.ok('id' in a && 'id' in b);
      assert.notEqual(a.id, b.id);
      assert.equal((await server.app.sandbox!.media.find(b.id))?.phoneNumberId, other.phone_number_id);
    });

    it('a provider failure while uploading propagates as a ProviderError', async () => {
      const media = await uploaded({ bytes: sample('image/png'), type: 'image/png' });
      const credentials = await credentialsOf(owner.organizationId, connection.id);
      await server.request('POST', '/sandbox/control/behaviour', { body: { fail_next: { code: 131000 } } });
      await assert.rejects(service().providerSourceFor(owner.organizationId, media.id, { id: connection.id, credentials }), {
        name: 'ProviderError',
        category: 'unavailable',
        retryable: true,
      });
    });
  });

  describe('inbound media', () => {
    /** A file a customer sent, as the sandbox holds it for the number. */
    async function received(bytes: Buffer, mimeType: string): Promise<{ id: string; sha256: string }> {
      const held = (await server.app.sandbox!.media.put({
        wabaId: connection.waba_id,
        phoneNumberId: connection.phone_number_id,
        mimeType,
        bytes,
        origin: 'received',
      }))!;
      return { id: held.id, sha256: held.sha256 };
    }
    const adopt = (providerMediaId: string, extra: { mimeType?: string; sha256?: string; filename?: string } = {}) =>
      server.app.store.db.transaction().execute((trx) =>
        service().adoptInbound(trx, {
          organizationId: owner.organizationId,
          connectionId: connection.id,
          providerMediaId,
          mimeType: extra.mimeType,
          sha256: extra.sha256,
          filename: extra.filename,
        }),
      );
    const fetchJobs = (mediaId: string) =>
      server.app.store.db
        .selectFrom('jobs')
        .selectAll()
        .where('name', '=', 'media.fetch')
        .where('payload', '=', JSON.stringify({ media_id: mediaId }))
        .execute();

    it('a media a customer sent through the sandbox is fetched by the worker and then downloads', async () => {
      const bytes = sample('image/png', 2_000);
      const answer = await server.request('POST', '/sandbox/control/inbound', {
        body: {
          phone_number_id: connection.phone_number_id,
          from: '447700900123',
          type: 'image',
          image: { mime_type: 'image/png', content_base64: bytes.toString('base64'), caption: 'my receipt' },
        },
      });
      assert.equal(answer.status, 200, answer.text);
      await settle(server);
      const deliveries = (await server.request('GET', '/sandbox/control/webhooks')).body.data as { body: any }[];
      const sent = deliveries
        .map((delivery) => delivery.body.entry[0].changes[0].value.messages?.[0])
        .find((message) => message?.id === answer.body.message_id);
      assert.ok(sent, 'the webhook went out');

      const id = await adopt(sent.image.id, { mimeType: sent.image.mime_type, sha256: sent.image.sha256 });
      assert.match(id, /^med_/);
      assert.equal(
        await adopt(sent.image.id, { mimeType: sent.image.mime_type, sha256: sent.image.sha256 }),
        id,
        'adopting the same provider media again answers the same id',
      );
      await server.app.worker.drain();

      const media = await get(id);
      assert.deepEqual(
        { ...media, id: undefined, created_at: undefined, updated_at: undefined },
        {
          id: undefined,
          object: 'media',
          kind: 'image',
          mime_type: 'image/png',
          size: bytes.length,
          sha256: sha256(bytes),
          filename: null,
          connection_id: connection.id,
          source: 'inbound',
          status: 'ready',
          failure_reason: null,
          metadata: {},
          created_at: undefined,
          updated_at: undefined,
        },
      );
      const response = await download(id);
      assert.equal(response.status, 200);
      assert.ok(response.bytes.equals(bytes), 'the bytes are the customer’s');
      assert.equal((await fetchJobs(id)).length, 1, 'one fetch, however often the media was adopted');
    });

    it('a pending media is refused for download with invalid_state until fetched', async () => {
      const file = await received(sample('application/pdf'), 'application/pdf');
      const id = await adopt(file.id, { mimeType: 'application/pdf', filename: 'invoice.pdf' });
      const media = await get(id);
      assert.equal(media.status, 'pending');
      assert.equal(media.size, null);
      assert.equal(media.sha256, null);
      assert.equal(media.kind, 'document');
      assert.equal(media.filename, 'invoice.pdf');
      assertError(await download(id), 409, 'invalid_state');
      await server.app.worker.drain();
      assert.equal((await get(id)).status, 'ready');
    });

    it('a media without a MIME type takes the one the provider gives when fetched', async () => {
      const bytes = sample('audio/ogg');
      const file = await received(bytes, 'audio/ogg');
      const id = await adopt(file.id);
      assert.equal((await get(id)).mime_type, 'application/octet-stream');
      await server.app.worker.drain();
      const media = await get(id);
      assert.equal(media.status, 'ready');
      assert.equal(media.mime_type, 'audio/ogg');
    });

    it('a provider failure is retried; once every attempt failed the media is failed and downloads answer 410 media_expired', async () => {
      const file = await received(sample('image/jpeg'), 'image/jpeg');
      const id = await adopt(file.id, { mimeType: 'image/jpeg', sha256: file.sha256 });
      const attempts = async () => (await fetchJobs(id))[0]!;
      for (let attempt = 1; attempt <= 6; attempt++) {
        await server.request('POST', '/sandbox/control/behaviour', { body: { fail_next: { code: 131000 } } });
        await server.app.worker.drain();
        const job = await attempts();
        assert.equal(job.attempts, attempt);
        assert.equal((await get(id)).status, attempt < 6 ? 'pending' : 'failed', `after attempt ${attempt}`);
        server.clock.advance(3 * HOUR);
      }
      assert.equal((await attempts()).status, 'failed');
      const media = await get(id);
      assert.match(media.failure_reason, /131000|internal|unavailable|error/i);
      assertError(await download(id), 410, 'media_expired');
      await assert.rejects(service().assertUsable(server.app.store.db, owner.organizationId, id, 'image', '/image/media_id'), { code: 'media_expired' });
    });

    it('a media the provider no longer has fails at once, without retries', async () => {
      const file = await received(sample('image/jpeg'), 'image/jpeg');
      await server.app.sandbox!.media.remove(file.id);
      const id = await adopt(file.id, { mimeType: 'image/jpeg' });
      await server.app.worker.drain();
      assert.equal((await get(id)).status, 'failed');
      assert.equal((await fetchJobs(id))[0]!.attempts, 1);
    });

    it('bytes that do not match the SHA-256 the webhook announced are not kept', async () => {
      const file = await received(sample('image/jpeg'), 'image/jpeg');
      const id = await adopt(file.id, { mimeType: 'image/jpeg', sha256: Buffer.alloc(32, 7).toString('base64') });
      await server.app.worker.drain();
      assert.equal((await get(id)).status, 'pending', 'retried later: the transfer may have been corrupted');
      assert.ok(!(await storedFiles()).some((name) => name.endsWith(id)));
    });

    it("an inbound media follows its number's access: another connection's key cannot see it", async () => {
      const id = await adopt((await received(sample('image/jpeg'), 'image/jpeg')).id, { mimeType: 'image/jpeg' });
      assertError(await server.request('GET', `/v1/media/${id}`, { token: otherKey }), 404, 'resource_not_found');
      assertError(await server.request('GET', `/v1/media/${id}`, { token: testKey }), 403, 'test_key_on_live_connection');
    });
  });
});

describe('media: an object store the service cannot use', () => {
  it('an upload is 503 service_unavailable (never a 500) and /readyz says not ready, while the API serves the rest', async (t) => {
    const s3 = await startLocalS3(t);
    const url = s3.url('media').replace('@media-test/', '@no-such-bucket/');
    const server = await startServer(t, { env: { MEDIA_STORAGE_URL: url } });
    const owner = await signUp(server);
    const data = new FormData();
    data.append('file', new Blob([new Uint8Array(sample('image/png'))], { type: 'image/png' }), 'pixel.png');
    const response = await fetch(`${server.url}/v1/media`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` }, body: data });
    const text = await response.text();
    assertError({ status: response.status, headers: response.headers, body: JSON.parse(text), text }, 503, 'service_unavailable');
    assert.equal(response.headers.get('retry-after'), '30');
    assertError(await server.request('GET', '/readyz'), 503, 'service_unavailable');
    assert.equal((await server.request('GET', '/v1/identity', { token: owner.token })).status, 200);
  });
});

describe('media: on an S3-compatible storage (MEDIA_STORAGE_URL)', () => {
  let s3: LocalS3;
  const { ctx, upload, uploaded, download } = mediaSuite(async (scope) => {
    s3 = await startLocalS3(scope);
    return { MEDIA_STORAGE_URL: s3.url('media') };
  });
  const inBucket = async () => (await s3.keys()).filter((key) => key.startsWith('media/'));

  it('an upload goes to the bucket under the prefix, never to DATA_DIR, and downloads back from it', async () => {
    // Larger than a part, so that it travels as a multipart upload.
    const bytes = sample('application/pdf', 6_000_000);
    const media = await uploaded({ bytes, type: 'application/pdf' });
    assert.ok((await s3.object(`media/${media.id}`)).equals(bytes), 'the bucket holds the bytes uploaded');
    assert.equal(existsSync(path.join(ctx.server.config.dataDir, 'media')), false);
    const response = await download(media.id);
    assert.equal(response.status, 200);
    assert.ok(response.bytes.equals(bytes), 'the download is the bucket’s object');
  });

  it('a media a customer sent is fetched into the bucket', async () => {
    const bytes = sample('image/png', 3_000);
    await inbound(ctx.server, ctx.connection, { type: 'image', image: { mime_type: 'image/png', content_base64: bytes.toString('base64') } });
    const row = await ctx.server.app.store.db
      .selectFrom('media')
      .selectAll()
      .where('connection_id', '=', ctx.connection.id)
      .where('source', '=', 'inbound')
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'ready', row.failure_reason ?? '');
    assert.ok((await s3.object(`media/${row.storage_key}`)).equals(bytes));
    assert.ok((await download(row.id)).bytes.equals(bytes));
  });

  it('a refused upload leaves nothing in the bucket: one cut off after its first parts, one stored whole then dropped', async () => {
    const before = await inBucket();
    assertError(await upload([['file', { bytes: sample('video/mp4', 16_000_001), type: 'video/mp4' }]]), 413, 'media_too_large');
    // The 413 comes once the storage's write has failed: three parts had gone, the object never came.
    assert.deepEqual(await inBucket(), before);
    const late = [
      ['file', { bytes: sample('image/png'), type: 'image/png' }],
      ['type', 'image/png'],
    ] satisfies Part[];
    assertError(await upload(late), 400, 'validation_failed');
    // Stored before the late field was read, its object is deleted once the answer has gone.
    await waitFor(async () => (await inBucket()).length === before.length, { message: 'the dropped upload’s object to be deleted' });
    assert.deepEqual(await inBucket(), before);
  });
});
