import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { request } from 'undici';
import { slowUpload } from '../../../test/slow-upload.ts';
import { DISCARDED_BODY_LIMIT_BYTES } from './body-size.ts';
import { assertGraphError, setup, V } from './harness.test.ts';

const BODY_LIMIT = 1024 * 1024;
const OVERSIZED = 2 * BODY_LIMIT;

async function post(url: string, size: number, options: { declared: boolean; token?: string }) {
  const upload = slowUpload(size);
  const response = await request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.declared ? { 'content-length': String(size) } : {}),
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
    },
    body: upload.body,
  });
  return { status: response.statusCode, headers: response.headers, body: (await response.body.json()) as any, progress: upload.progress };
}

describe('the sandbox: a body larger than an endpoint takes', () => {
  for (const declared of [true, false]) {
    const sending = declared ? 'with its Content-Length' : 'chunked';
    it(`sent ${sending} to the control API, is read to its end and answered 413 in the control envelope`, async (t) => {
      const { base } = await setup(t);
      const answer = await post(`${base}/control/inbound`, OVERSIZED, { declared });
      assert.equal(answer.status, 413, JSON.stringify(answer.body));
      assert.equal(answer.body.error.type, 'invalid_request_error');
      assert.equal(answer.body.error.code, 'body_too_large');
      assert.equal(answer.body.error.message, `The request body is larger than the ${BODY_LIMIT} bytes this endpoint takes.`);
      assert.equal(typeof answer.body.error.request_id, 'string');
      assert.match(answer.body.error.doc_url, /\/docs\/errors\/body_too_large$/);
      assert.equal(answer.progress.sent, OVERSIZED, 'the whole body was sent: the connection was not closed under the upload');
    });

    it(`sent ${sending} to a Graph endpoint, is read to its end and answered 413 in the provider's envelope`, async (t) => {
      const { base, connect } = await setup(t);
      const { token, phoneNumberId } = await connect();
      const answer = await post(`${base}${V}/${phoneNumberId}/messages`, OVERSIZED, { declared, token });
      assertGraphError(answer, 413, 100);
      assert.match(answer.body.error.error_data.details, new RegExp(`larger than the ${BODY_LIMIT} bytes`));
      assert.equal(answer.body.error.fbtrace_id, answer.headers['x-fb-trace-id']);
      assert.equal(answer.progress.sent, OVERSIZED, 'the whole body was sent: the connection was not closed under the upload');
    });
  }

  // The time-out only stops a run that would otherwise wait for ever, were the rest awaited after all.
  it('declared larger than the sandbox reads to discard, is answered 413 at once and the connection closed', { timeout: 30_000 }, async (t) => {
    const { base } = await setup(t);
    // Sends one chunk of a body it never finishes: an answer that waited for the rest would never come.
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    t.after(() => stop());
    async function* endless() {
      yield Buffer.alloc(64 * 1024, 'x');
      await stopped;
    }
    const response = await request(`${base}/control/inbound`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(BODY_LIMIT + DISCARDED_BODY_LIMIT_BYTES + 1) },
      body: Readable.from(endless()),
    });
    assert.equal(response.statusCode, 413);
    assert.equal(response.headers.connection, 'close');
    assert.equal(((await response.body.json()) as any).error.code, 'body_too_large');
  });
});
