/**
 * The harness the sandbox's test files share (it holds no tests itself): the sandbox mounted under
 * `/sandbox` on a loopback port, a real loopback webhook receiver that checks every signature over
 * the exact bytes received, and small helpers to call the Graph and control APIs over HTTP.
 */
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import Fastify from 'fastify';
import { request } from 'undici';
import { ManualClock } from '../../lib/clock.ts';
import { createTestStore } from '../../../test/harness.ts';
import { storeFor } from '../../db/connect.ts';
import { createSandboxProvider, type SandboxProviderOptions, type SandboxStore, type SandboxTables } from './index.ts';

export const APP_SECRET = 'test-app-secret';
export const VERIFY_TOKEN = 'verify-me';
export const USER = '15551234567';
export const V = '/graph/v24.0';

export interface Received {
  raw: Buffer;
  body: any;
  signatureValid: boolean;
}

/** A real loopback webhook receiver; answers the GET handshake for `VERIFY_TOKEN`. */
export async function startReceiver(t: TestContext) {
  const received: Received[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET') {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const ok = url.searchParams.get('hub.mode') === 'subscribe' && url.searchParams.get('hub.verify_token') === VERIFY_TOKEN;
      res.writeHead(ok ? 200 : 403).end(ok ? url.searchParams.get('hub.challenge') : '');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const expected = Buffer.from(`sha256=${createHmac('sha256', APP_SECRET).update(raw).digest('hex')}`);
      const given = Buffer.from(String(req.headers['x-hub-signature-256'] ?? ''));
      received.push({ raw, body: JSON.parse(raw.toString('utf8')), signatureValid: given.length === expected.length && timingSafeEqual(given, expected) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/provider/webhook`, received };
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  raw: Buffer;
}

/**
 * A fresh store for a sandbox (its own SQLite file, or its own PostgreSQL database when
 * TEST_DATABASE_URL is set), dropped when the test ends.
 */
export async function sandboxStore(t: TestContext): Promise<SandboxStore> {
  return storeFor<SandboxTables>((await createTestStore(t)).store);
}

/**
 * One sandbox process on a loopback port. Passing `store` (from `sandboxStore(t)`) puts a second
 * process on the same store, as several api processes share one database.
 */
export async function setup(t: TestContext, options: Partial<Omit<SandboxProviderOptions, 'clock' | 'appSecret'>> = {}) {
  const clock = new ManualClock('2026-03-01T12:00:00Z');
  const receiver = await startReceiver(t);
  const sandbox = createSandboxProvider({
    store: options.store ?? (await sandboxStore(t)),
    clock,
    appSecret: APP_SECRET,
    webhookUrl: receiver.url,
    verifyToken: VERIFY_TOKEN,
    ...options,
  });
  const app = Fastify();
  await app.register(sandbox.plugin, { prefix: '/sandbox' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => {
    sandbox.close();
    await app.close();
  });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/sandbox`;

  async function call(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, token?: string, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await request(path.startsWith('http') ? path : `${base}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const raw = Buffer.from(await response.body.arrayBuffer());
    const isJson = String(response.headers['content-type'] ?? '').startsWith('application/json');
    return { status: response.statusCode, headers: response.headers, body: isJson ? JSON.parse(raw.toString('utf8')) : undefined, raw };
  }

  /** A control call that must succeed; answers its body. */
  async function control(path: string, body?: unknown): Promise<any> {
    const answer = await call('POST', `/control${path}`, body ?? {});
    assert.equal(answer.status, 200, `control ${path}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  }

  /** Exchanges a code (any code; `coexistence…` makes a coexistence number) and, by default, subscribes the app. */
  async function connect(code = 'any-code', options: { subscribe?: boolean } = {}) {
    const exchange = await call('GET', `${V}/oauth/access_token?client_id=app&client_secret=${APP_SECRET}&code=${encodeURIComponent(code)}`);
    assert.equal(exchange.status, 200, JSON.stringify(exchange.body));
    const connection = {
      token: exchange.body.access_token as string,
      phoneNumberId: exchange.body.sandbox.phone_number_id as string,
      wabaId: exchange.body.sandbox.waba_id as string,
    };
    if (options.subscribe ?? true) assert.equal((await call('POST', `${V}/${connection.wabaId}/subscribed_apps`, undefined, connection.token)).status, 200);
    return connection;
  }

  const inbound = (body: Record<string, unknown>) => call('POST', '/control/inbound', { from: USER, ...body });
  const send = (token: string, phoneNumberId: string, body: Record<string, unknown>) =>
    call('POST', `${V}/${phoneNumberId}/messages`, { messaging_product: 'whatsapp', to: USER, ...body }, token);
  const sendText = (token: string, phoneNumberId: string, to = USER) => send(token, phoneNumberId, { to, type: 'text', text: { body: 'hello' } });

  /** A multipart upload as the provider takes it: `file` with its own type, `type`, `messaging_product`. */
  async function upload(
    token: string,
    phoneNumberId: string,
    file: { bytes: Buffer; mime: string; type?: string | null; filename?: string; product?: string | null },
  ): Promise<Answer> {
    const form = new FormData();
    if (file.product !== null) form.set('messaging_product', file.product ?? 'whatsapp');
    if (file.type !== null) form.set('type', file.type ?? file.mime);
    form.set('file', new Blob([new Uint8Array(file.bytes)], { type: file.mime }), file.filename ?? 'file.bin');
    const response = await fetch(`${base}${V}/${phoneNumberId}/media`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    const raw = Buffer.from(await response.arrayBuffer());
    return { status: response.status, headers: Object.fromEntries(response.headers), body: JSON.parse(raw.toString('utf8')), raw };
  }

  return { clock, sandbox, receiver, base, call, control, connect, inbound, send, sendText, upload };
}

export type Harness = Awaited<ReturnType<typeof setup>>;

export function assertGraphError(response: { status: number; body: any }, status: number, code: number): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error.code, code, JSON.stringify(response.body));
  assert.equal(response.body.error.type, 'OAuthException');
  assert.match(response.body.error.message, new RegExp(`^\\(#${code}\\) `));
  assert.equal(typeof response.body.error.error_data.details, 'string');
  assert.equal(typeof response.body.error.fbtrace_id, 'string');
}

/** The changes of every webhook received, flattened: `{field, value, entry}`. */
export function changesOf(received: Received[], field?: string): { field: string; value: any; entry: any }[] {
  return received
    .flatMap((webhook) => webhook.body.entry.flatMap((entry: any) => entry.changes.map((change: any) => ({ field: change.field, value: change.value, entry }))))
    .filter((change) => field === undefined || change.field === field);
}

export function statusesOf(
  received: Received[],
): { id: string; status: string; errors?: { code: number; error_data: { details: string } }[]; pricing?: any; conversation?: any }[] {
  return changesOf(received, 'messages').flatMap((change) => change.value.statuses ?? []);
}

export function messagesOf(received: Received[]): any[] {
  return changesOf(received, 'messages').flatMap((change) => change.value.messages ?? []);
}
