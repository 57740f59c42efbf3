import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { ProviderError, type ProviderCredentials } from '../provider.ts';
import { createCloudProvider } from './cloud-adapter.ts';
import { rejectionOf } from '../../../test/rejection.ts';

/**
 * What the adapter puts on the wire and how it reads the answers, checked against throwaway loopback
 * servers that answer in the provider's documented shapes (cloud-api-facts.md). The same methods run
 * against the sandbox in cloud-adapter.test.ts; these pin the exact payloads, which the sandbox does
 * not echo back.
 */

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  json: any;
}

interface Answer {
  status?: number;
  json?: unknown;
  bytes?: Buffer;
  /** Send `bytes` in chunks without a Content-Length, so the size is unknown until the end. */
  chunked?: boolean;
  headers?: Record<string, string>;
}

/** A fake Graph on loopback: `answer` decides each response; every request is recorded. */
async function fakeGraph(t: TestContext, answer: (seen: Seen, base: string) => Answer) {
  const seen: Seen[] = [];
  let base = '';
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', base);
      const body = Buffer.concat(chunks);
      let json: unknown;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        json = undefined;
      }
      const record: Seen = { method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body, json };
      seen.push(record);
      const reply = answer(record, base);
      if (reply.bytes !== undefined && reply.chunked) {
        res.writeHead(reply.status ?? 200, reply.headers);
        for (let offset = 0; offset < reply.bytes.length; offset += 1000) res.write(reply.bytes.subarray(offset, offset + 1000));
        res.end();
        return;
      }
      if (reply.bytes !== undefined) {
        res.writeHead(reply.status ?? 200, { 'content-length': String(reply.bytes.length), ...reply.headers }).end(reply.bytes);
        return;
      }
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify(reply.json ?? { success: true }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = createCloudProvider({ baseUrl: base, version: 'v24.0', appId: 'app', appSecret: 'secret', timeoutMs: 2000 });
  t.after(async () => {
    await provider.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { provider, seen, base: () => base };
}

const credentials: ProviderCredentials = { accessToken: 'token-1', phoneNumberId: '1065', wabaId: '1022' };
const SENT = { messaging_product: 'whatsapp', contacts: [{ input: '+16505551234', wa_id: '16505551234' }], messages: [{ id: 'wamid.OUT' }] };

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

describe('the cloud adapter on the wire: message contents', () => {
  it('template parameters become header, body and button components in the provider shape', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: SENT }));
    await provider.sendMessage(credentials, {
      to: '+16505551234',
      type: 'template',
      name: 'order_shipped',
      language: 'en_US',
      headerParameter: { type: 'image', media: { link: 'https://example.com/box.jpg' } },
      bodyParameters: [
        { type: 'text', text: 'Ada' },
        { type: 'currency', fallback: '€12.34', currencyCode: 'EUR', amount1000: 12_340 },
        { type: 'date_time', fallback: 'March 3, 2026' },
      ],
      buttonParameters: [
        { type: 'url', index: 0, urlSuffix: 'track/123' },
        { type: 'quick_reply', index: 1, payload: 'STOP' },
        { type: 'copy_code', index: 2, code: 'SAVE10' },
      ],
    });
    assert.equal(seen[0]?.path, '/v24.0/1065/messages');
    assert.deepEqual(seen[0]?.json.template, {
      name: 'order_shipped',
      language: { code: 'en_US' },
      components: [
        { type: 'header', parameters: [{ type: 'image', image: { link: 'https://example.com/box.jpg' } }] },
        {
          type: 'body',
          parameters: [
            { type: 'text', text: 'Ada' },
            { type: 'currency', currency: { fallback_value: '€12.34', code: 'EUR', amount_1000: 12_340 } },
            { type: 'date_time', date_time: { fallback_value: 'March 3, 2026' } },
          ],
        },
        { type: 'button', sub_type: 'url', index: '0', parameters: [{ type: 'text', text: 'track/123' }] },
        { type: 'button', sub_type: 'quick_reply', index: '1', parameters: [{ type: 'payload', payload: 'STOP' }] },
        { type: 'button', sub_type: 'copy_code', index: '2', parameters: [{ type: 'coupon_code', coupon_code: 'SAVE10' }] },
      ],
    });
  });

  it('named template parameters carry parameter_name; a template without parameters sends no components', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: SENT }));
    await provider.sendMessage(credentials, {
      to: '16505551234',
      type: 'template',
      name: 'welcome',
      language: 'en',
      headerParameter: { type: 'text', text: 'Spring', name: 'season' },
      bodyParameters: [{ type: 'text', text: 'Ada', name: 'first_name' }],
    });
    await provider.sendMessage(credentials, { to: '16505551234', type: 'template', name: 'hello_world', language: 'en_US' });
    assert.deepEqual(seen[0]?.json.template.components, [
      { type: 'header', parameters: [{ type: 'text', text: 'Spring', parameter_name: 'season' }] },
      { type: 'body', parameters: [{ type: 'text', text: 'Ada', parameter_name: 'first_name' }] },
    ]);
    assert.deepEqual(seen[1]?.json.template, { name: 'hello_world', language: { code: 'en_US' } });
  });

  it('reply buttons and a list become interactive objects; absent header and footer stay absent', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: SENT }));
    await provider.sendMessage(credentials, {
      to: '16505551234',
      type: 'interactive',
      interactive: {
        kind: 'buttons',
        header: { type: 'document', media: { id: '555' }, filename: 'menu.pdf' },
        body: 'Change or cancel?',
        footer: 'Reply within a day',
        buttons: [
          { id: 'change', title: 'Change' },
          { id: 'cancel', title: 'Cancel' },
        ],
      },
      replyTo: 'wamid.IN',
    });
    await provider.sendMessage(credentials, {
      to: '16505551234',
      type: 'interactive',
      interactive: {
        kind: 'list',
        body: 'Pick a shipping option',
        buttonLabel: 'Options',
        sections: [{ title: 'Fast', rows: [{ id: 'express', title: 'Express', description: 'Next day' }] }, { rows: [{ id: 'slow', title: 'Standard' }] }],
      },
    });
    assert.equal(seen[0]?.json.type, 'interactive');
    assert.deepEqual(seen[0]?.json.context, { message_id: 'wamid.IN' });
    assert.deepEqual(seen[0]?.json.interactive, {
      type: 'button',
      header: { type: 'document', document: { id: '555', filename: 'menu.pdf' } },
      body: { text: 'Change or cancel?' },
      footer: { text: 'Reply within a day' },
      action: {
        buttons: [
          { type: 'reply', reply: { id: 'change', title: 'Change' } },
          { type: 'reply', reply: { id: 'cancel', title: 'Cancel' } },
        ],
      },
    });
    assert.deepEqual(seen[1]?.json.interactive, {
      type: 'list',
      body: { text: 'Pick a shipping option' },
      action: {
        button: 'Options',
        sections: [{ title: 'Fast', rows: [{ id: 'express', title: 'Express', description: 'Next day' }] }, { rows: [{ id: 'slow', title: 'Standard' }] }],
      },
    });
  });

  it('contact cards become the provider contacts array with upper-case labels', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: SENT }));
    await provider.sendMessage(credentials, {
      to: '16505551234',
      type: 'contacts',
      contacts: [
        {
          name: { formattedName: 'Barbara J. Johnson', firstName: 'Barbara', lastName: 'Johnson' },
          phones: [{ phone: '+1 650 555 1234', type: 'cell', waId: '16505551234' }],
          emails: [{ email: 'b@example.com', type: 'work' }],
          addresses: [{ city: 'Menlo Park', countryCode: 'US', type: 'work' }],
          org: { company: 'Example Inc.' },
          urls: [{ url: 'https://example.com' }],
          birthday: '1990-01-31',
        },
      ],
    });
    assert.deepEqual(seen[0]?.json.contacts, [
      {
        name: { formatted_name: 'Barbara J. Johnson', first_name: 'Barbara', last_name: 'Johnson' },
        phones: [{ phone: '+1 650 555 1234', type: 'CELL', wa_id: '16505551234' }],
        emails: [{ email: 'b@example.com', type: 'WORK' }],
        addresses: [{ city: 'Menlo Park', country_code: 'US', type: 'WORK' }],
        org: { company: 'Example Inc.' },
        urls: [{ url: 'https://example.com' }],
        birthday: '1990-01-31',
      },
    ]);
  });
});

describe('the cloud adapter on the wire: media', () => {
  it('an upload is multipart with the file, its type and messaging_product, and answers the media id', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: { id: '1003383421387256' } }));
    const bytes = Buffer.from('%PDF-1.7 fake');
    const uploaded = await provider.uploadMedia(credentials, { bytes, mimeType: 'application/pdf', filename: 'invoice.pdf' });
    assert.deepEqual(uploaded, { providerMediaId: '1003383421387256' });
    const request = seen[0]!;
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/v24.0/1065/media');
    assert.equal(request.headers.authorization, 'Bearer token-1');
    const form = await new Request('http://x/', {
      method: 'POST',
      headers: { 'content-type': String(request.headers['content-type']) },
      body: request.body,
    }).formData();
    assert.equal(form.get('messaging_product'), 'whatsapp');
    assert.equal(form.get('type'), 'application/pdf');
    const file = form.get('file') as File;
    assert.equal(file.name, 'invoice.pdf');
    assert.equal(file.type, 'application/pdf');
    assert.deepEqual(Buffer.from(await file.arrayBuffer()), bytes);
  });

  it('getting media asks with phone_number_id and reads the string file_size as a number', async (t) => {
    const { provider, seen, base } = await fakeGraph(t, (_seen, root) => ({
      json: { messaging_product: 'whatsapp', url: `${root}/cdn/1`, mime_type: 'image/jpeg', sha256: 'ab'.repeat(32), file_size: '2048', id: '77' },
    }));
    const info = await provider.getMedia(credentials, '77');
    assert.equal(seen[0]?.path, '/v24.0/77');
    assert.equal(seen[0]?.query.get('phone_number_id'), '1065');
    assert.deepEqual(info, { providerMediaId: '77', url: `${base()}/cdn/1`, mimeType: 'image/jpeg', sha256: 'ab'.repeat(32), fileSize: 2048 });
  });

  it('a download looks the URL up, GETs it with the token and streams the bytes, checked against the hash', async (t) => {
    const bytes = Buffer.alloc(300_000, 7);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const { provider, seen } = await fakeGraph(t, (request, base) =>
      request.path === '/cdn/77'
        ? { bytes, headers: { 'content-type': 'image/jpeg' } }
        : { json: { url: `${base}/cdn/77`, mime_type: 'image/jpeg', sha256, file_size: String(bytes.length), id: '77' } },
    );
    const media = await provider.downloadMedia(credentials, '77');
    assert.equal(media.mimeType, 'image/jpeg');
    assert.equal(media.size, bytes.length);
    assert.deepEqual(await readAll(media.stream), bytes);
    assert.equal(seen[1]?.path, '/cdn/77');
    assert.equal(seen[1]?.headers.authorization, 'Bearer token-1');
  });

  it('an expired download URL (404) is looked up once more and the fresh one used', async (t) => {
    let lookups = 0;
    const { provider } = await fakeGraph(t, (request, base) => {
      if (request.path === '/cdn/old') return { status: 404, json: { error: { message: 'URL expired', code: 100 } } };
      if (request.path === '/cdn/new') return { bytes: Buffer.from('fresh') };
      lookups += 1;
      return { json: { url: `${base}/cdn/${lookups === 1 ? 'old' : 'new'}`, mime_type: 'text/plain', id: '9' } };
    });
    const media = await provider.downloadMedia(credentials, '9');
    assert.equal((await readAll(media.stream)).toString(), 'fresh');
    assert.equal(lookups, 2);
  });

  it('media larger than maxBytes is refused before reading when the size is known, and cut off when it is not', async (t) => {
    const { provider } = await fakeGraph(t, (request, base) => {
      if (request.path === '/cdn/announced') return { bytes: Buffer.alloc(5000) };
      if (request.path === '/cdn/chunked') return { bytes: Buffer.alloc(5000), chunked: true };
      return { json: { url: `${base}/cdn/${request.path.endsWith('big') ? 'announced' : 'chunked'}`, mime_type: 'video/mp4', id: 'x' } };
    });
    const announced = await rejectionOf(provider.downloadMedia(credentials, 'big', { maxBytes: 1000 }), ProviderError);
    assert.equal(announced.category, 'rejected');
    assert.match(announced.message, /5000 bytes/);
    const unannounced = await provider.downloadMedia(credentials, 'unannounced', { maxBytes: 1000 });
    assert.equal(unannounced.size, undefined);
    const cutOff = await rejectionOf(readAll(unannounced.stream), ProviderError);
    assert.equal(cutOff.category, 'rejected');
    assert.equal(cutOff.retryable, false);
  });

  it('the provider file_size alone is enough to refuse media over the limit without fetching it', async (t) => {
    const { provider, seen } = await fakeGraph(t, (_request, base) => ({
      json: { url: `${base}/cdn/1`, mime_type: 'video/mp4', file_size: '16000000', id: '1' },
    }));
    const error = await rejectionOf(provider.downloadMedia(credentials, '1', { maxBytes: 5_000_000 }), ProviderError);
    assert.equal(error.category, 'rejected');
    assert.equal(seen.length, 1);
  });

  it('a reader that stops early releases the download without an unhandled error', async (t) => {
    const { provider } = await fakeGraph(t, (request, base) =>
      request.path === '/cdn/1' ? { bytes: Buffer.alloc(200_000, 1), chunked: true } : { json: { url: `${base}/cdn/1`, mime_type: 'video/mp4', id: '1' } },
    );
    const media = await provider.downloadMedia(credentials, '1');
    for await (const chunk of media.stream) {
      assert.ok((chunk as Buffer).length > 0);
      break;
    }
    assert.equal(media.stream.destroyed, true);
  });

  it('bytes that do not match the provider hash fail the stream at its end', async (t) => {
    const { provider } = await fakeGraph(t, (request, base) =>
      request.path === '/cdn/1'
        ? { bytes: Buffer.from('tampered') }
        : { json: { url: `${base}/cdn/1`, mime_type: 'text/plain', sha256: createHash('sha256').update('original').digest('base64'), id: '1' } },
    );
    const media = await provider.downloadMedia(credentials, '1');
    const error = await rejectionOf(readAll(media.stream), ProviderError);
    assert.equal(error.category, 'unavailable');
    assert.match(error.message, /SHA-256/);
  });

  it('a download URL over plain http to another host is refused, so the token never leaves in the clear', async (t) => {
    const { provider } = await fakeGraph(t, () => ({ json: { url: 'http://cdn.example.invalid/file', mime_type: 'text/plain', id: '1' } }));
    const error = await rejectionOf(provider.downloadMedia(credentials, '1'), ProviderError);
    assert.match(error.message, /not https/);
  });

  it('deleting media sends DELETE with phone_number_id', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: { success: true } }));
    await provider.deleteMedia(credentials, '77');
    assert.equal(seen[0]?.method, 'DELETE');
    assert.equal(seen[0]?.path, '/v24.0/77');
    assert.equal(seen[0]?.query.get('phone_number_id'), '1065');
  });
});

describe('the cloud adapter on the wire: templates', () => {
  const page = (ids: string[], after?: string, base?: string) => ({
    data: ids.map((id) => ({
      id,
      name: `template_${id}`,
      language: 'en_US',
      status: 'APPROVED',
      category: 'UTILITY',
      components: [{ type: 'BODY', text: 'Hi {{1}}', example: { body_text: [['Ada']] } }],
    })),
    paging: {
      cursors: { before: 'b', after: after ?? 'last' },
      ...(after === undefined ? {} : { next: `${base}/v24.0/1022/message_templates?after=${after}` }),
    },
  });

  it('listing walks every page by its cursor until the provider gives no next', async (t) => {
    const { provider, seen } = await fakeGraph(t, (request, base) => {
      const after = request.query.get('after');
      if (after === null) return { json: page(['1', '2'], 'c1', base) };
      if (after === 'c1') return { json: page(['3'], 'c2', base) };
      return { json: page(['4']) };
    });
    const templates = await provider.listTemplates(credentials);
    assert.deepEqual(
      templates.map((template) => template.providerTemplateId),
      ['1', '2', '3', '4'],
    );
    assert.deepEqual(
      seen.map((request) => request.query.get('after')),
      [null, 'c1', 'c2'],
    );
    assert.equal(seen[0]?.query.get('limit'), '100');
    assert.deepEqual(templates[0], {
      providerTemplateId: '1',
      name: 'template_1',
      language: 'en_US',
      status: 'approved',
      category: 'utility',
      parameterFormat: 'positional',
      components: [{ type: 'body', text: 'Hi {{1}}', examples: ['Ada'] }],
      quality: undefined,
      rejectedReason: undefined,
    });
  });

  it('a paging loop (the same cursor again) fails instead of spinning', async (t) => {
    const { provider } = await fakeGraph(t, (_request, base) => ({ json: page(['1'], 'same', base) }));
    const error = await rejectionOf(provider.listTemplates(credentials), ProviderError);
    assert.equal(error.category, 'unavailable');
  });

  it('provider statuses, categories, quality and components map to domain words; unknown ones are kept', async (t) => {
    const { provider } = await fakeGraph(t, () => ({
      json: {
        data: [
          {
            id: 10,
            name: 'promo',
            language: 'pt_BR',
            status: 'PAUSED',
            category: 'MARKETING',
            parameter_format: 'NAMED',
            quality_score: { score: 'YELLOW' },
            components: [
              { type: 'HEADER', format: 'IMAGE', example: { header_handle: ['4::aW1hZ2U='] } },
              { type: 'BODY', text: 'Oi {{nome}}', example: { body_text_named_params: [{ param_name: 'nome', example: 'Ana' }] } },
              { type: 'FOOTER', text: 'Sair: responda PARE' },
              {
                type: 'BUTTONS',
                buttons: [
                  { type: 'QUICK_REPLY', text: 'PARE' },
                  { type: 'URL', text: 'Ver', url: 'https://example.com/{{1}}', example: ['https://example.com/x'] },
                ],
              },
              { type: 'CAROUSEL', cards: [] },
            ],
          },
          {
            id: '11',
            name: 'odd',
            language: 'en',
            status: 'SOMETHING_NEW',
            category: 'NEW_KIND',
            components: [{ type: 'BUTTONS', buttons: [{ type: 'MPM', text: 'x' }] }],
          },
          { name: 'no_id' },
          { id: '12', name: 'rejected_one', language: 'en', status: 'REJECTED', category: 'UTILITY', rejected_reason: 'INVALID_FORMAT', components: [] },
        ],
      },
    }));
    const [promo, odd, rejected] = await provider.listTemplates(credentials);
    assert.deepEqual(promo, {
      providerTemplateId: '10',
      name: 'promo',
      language: 'pt_BR',
      status: 'paused',
      category: 'marketing',
      parameterFormat: 'named',
      quality: 'medium',
      rejectedReason: undefined,
      components: [
        { type: 'header', format: 'image', example: '4::aW1hZ2U=' },
        { type: 'body', text: 'Oi {{nome}}', examples: { nome: 'Ana' } },
        { type: 'footer', text: 'Sair: responda PARE' },
        {
          type: 'buttons',
          buttons: [
            { type: 'quick_reply', text: 'PARE' },
            { type: 'url', text: 'Ver', url: 'https://example.com/{{1}}', example: 'https://example.com/x' },
          ],
        },
        { type: 'other', providerType: 'carousel', definition: { type: 'CAROUSEL', cards: [] } },
      ],
    });
    assert.equal(odd?.status, 'unknown');
    assert.equal(odd?.category, undefined);
    assert.equal(odd?.components[0]?.type, 'other');
    assert.equal(rejected?.status, 'rejected');
    assert.equal(rejected?.rejectedReason, 'INVALID_FORMAT');
  });

  it('creating a template posts the provider shape and reads id, status and category back', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: { id: '594425479261596', status: 'PENDING', category: 'MARKETING' } }));
    const created = await provider.createTemplate(credentials, {
      name: 'seasonal_promotion',
      language: 'en_US',
      category: 'utility',
      parameterFormat: 'named',
      components: [
        { type: 'header', format: 'text', text: 'Our {{sale_name}} is on!', example: 'Summer Sale' },
        { type: 'body', text: 'Shop now, {{first_name}}', examples: { first_name: 'Ada' } },
        { type: 'footer', text: 'Reply STOP to opt out' },
        {
          type: 'buttons',
          buttons: [
            { type: 'quick_reply', text: 'Stop' },
            { type: 'phone_number', text: 'Call', phoneNumber: '+15550783881' },
            { type: 'copy_code', example: 'SAVE10' },
          ],
        },
      ],
    });
    assert.deepEqual(created, { providerTemplateId: '594425479261596', status: 'pending', category: 'marketing' });
    assert.equal(seen[0]?.path, '/v24.0/1022/message_templates');
    assert.deepEqual(seen[0]?.json, {
      name: 'seasonal_promotion',
      language: 'en_US',
      category: 'UTILITY',
      parameter_format: 'NAMED',
      components: [
        {
          type: 'HEADER',
          format: 'TEXT',
          text: 'Our {{sale_name}} is on!',
          example: { header_text_named_params: [{ param_name: 'sale_name', example: 'Summer Sale' }] },
        },
        { type: 'BODY', text: 'Shop now, {{first_name}}', example: { body_text_named_params: [{ param_name: 'first_name', example: 'Ada' }] } },
        { type: 'FOOTER', text: 'Reply STOP to opt out' },
        {
          type: 'BUTTONS',
          buttons: [
            { type: 'QUICK_REPLY', text: 'Stop' },
            { type: 'PHONE_NUMBER', text: 'Call', phone_number: '+15550783881' },
            { type: 'COPY_CODE', example: 'SAVE10' },
          ],
        },
      ],
    });
  });

  it('positional examples go as body_text and header_text', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: { id: '1', status: 'APPROVED', category: 'UTILITY' } }));
    await provider.createTemplate(credentials, {
      name: 'order_update',
      language: 'en',
      category: 'utility',
      components: [
        { type: 'header', format: 'text', text: 'Order {{1}}', example: '#42' },
        { type: 'body', text: 'Hi {{1}}, order {{2}} shipped', examples: ['Ada', '#42'] },
      ],
    });
    assert.deepEqual(seen[0]?.json.components, [
      { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['#42'] } },
      { type: 'BODY', text: 'Hi {{1}}, order {{2}} shipped', example: { body_text: [['Ada', '#42']] } },
    ]);
    assert.equal(seen[0]?.json.parameter_format, undefined);
  });

  it('deleting by name deletes every language; with the id, only that one (hsm_id)', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: { success: true } }));
    await provider.deleteTemplate(credentials, { name: 'promo' });
    await provider.deleteTemplate(credentials, { name: 'promo', providerTemplateId: '10' });
    assert.equal(seen[0]?.method, 'DELETE');
    assert.equal(seen[0]?.path, '/v24.0/1022/message_templates');
    assert.deepEqual([...seen[0].query.entries()], [['name', 'promo']]);
    assert.deepEqual(
      [...seen[1]!.query.entries()],
      [
        ['name', 'promo'],
        ['hsm_id', '10'],
      ],
    );
  });
});

describe('the cloud adapter on the wire: numbers and coexistence', () => {
  it('unsubscribing deletes subscribed_apps; registering posts the PIN; a sync asks smb_app_data', async (t) => {
    const { provider, seen } = await fakeGraph(t, (request) =>
      request.path.endsWith('smb_app_data') ? { json: { messaging_product: 'whatsapp', request_id: 'req-1' } } : { json: { success: true } },
    );
    await provider.unsubscribeApp(credentials);
    await provider.registerNumber(credentials, '123456');
    const history = await provider.requestHistorySync(credentials, 'history');
    await provider.requestHistorySync(credentials, 'contacts');
    assert.deepEqual(
      seen.map((request) => `${request.method} ${request.path}`),
      ['DELETE /v24.0/1022/subscribed_apps', 'POST /v24.0/1065/register', 'POST /v24.0/1065/smb_app_data', 'POST /v24.0/1065/smb_app_data'],
    );
    assert.deepEqual(seen[1]?.json, { messaging_product: 'whatsapp', pin: '123456' });
    assert.deepEqual(seen[2]?.json, { messaging_product: 'whatsapp', sync_type: 'history' });
    assert.deepEqual(seen[3]?.json, { messaging_product: 'whatsapp', sync_type: 'smb_app_state_sync' });
    assert.deepEqual(history, { requestId: 'req-1' });
  });

  it('a PIN that is not six digits is refused before it costs one of the few register attempts', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({ json: { success: true } }));
    await assert.rejects(provider.registerNumber(credentials, '12345'), RangeError);
    assert.equal(seen.length, 0);
  });

  it('a coexistence number reads as isOnBizApp with its platform type', async (t) => {
    const { provider, seen } = await fakeGraph(t, () => ({
      json: {
        id: '1065',
        display_phone_number: '+1 555-078-3881',
        verified_name: 'Shop',
        is_on_biz_app: true,
        platform_type: 'CLOUD_API',
        throughput: { level: 'STANDARD' },
      },
    }));
    const info = await provider.getPhoneNumber(credentials);
    assert.equal(info.isOnBizApp, true);
    assert.equal(info.platformType, 'CLOUD_API');
    assert.match(seen[0]?.query.get('fields') ?? '', /is_on_biz_app/);
  });

  it('an exchange on an account with several numbers lists them all and picks none', async (t) => {
    const { provider } = await fakeGraph(t, (request) => {
      if (request.path.endsWith('oauth/access_token')) return { json: { access_token: 'business-token' } };
      if (request.path.endsWith('debug_token'))
        return { json: { data: { granular_scopes: [{ scope: 'whatsapp_business_management', target_ids: ['1022'] }] } } };
      return { json: { data: [{ id: 'a' }, { id: 'b' }] } };
    });
    assert.deepEqual(await provider.exchangeCode('code'), {
      accessToken: 'business-token',
      wabaId: '1022',
      phoneNumberId: undefined,
      phoneNumberIds: ['a', 'b'],
    });
  });
});
