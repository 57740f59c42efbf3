/**
 * The server the fuzz runs against: limits out of reach (but still metered, so every answer still
 * carries its headers), two organizations with a few records each, made through the API, and the
 * ids the API then lists, by prefix. The operations come from the document the server serves.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ORGANIZATION_KEY_ALLOWED_SCOPES } from '../../src/modules/credentials/scopes.schemas.ts';
import { createConnection, createKey, defineTemplate, inbound, settle, signUp, type SignedUp } from '../factories.ts';
import { startServer, type Scope, type TestServer } from '../harness.ts';
import { startReceiver } from '../receiver.ts';
import { operationsOf, type OpenApiDocument, type Operation, type World } from './operations.ts';
import type { FuzzTarget } from './runner.ts';

export interface FuzzSetup {
  server: TestServer;
  target: FuzzTarget;
  operations: Operation[];
  world: World;
}

const ID = /^([a-z]+)_[0-9A-HJKMNP-TV-Z]{26}$/;

function collectIds(value: unknown, into: Map<string, Set<string>>): void {
  if (typeof value === 'string') {
    const prefix = ID.exec(value)?.[1];
    if (prefix) into.set(prefix, (into.get(prefix) ?? new Set()).add(value));
  } else if (Array.isArray(value)) for (const item of value) collectIds(item, into);
  else if (typeof value === 'object' && value !== null) for (const item of Object.values(value)) collectIds(item, into);
}

/**
 * Every id an organization's owner can read through the document's GET operations: those without
 * path parameters, then those with one `{id}` filled with an id found by the first round.
 */
async function harvest(server: TestServer, token: string, operations: Operation[], exclude: ReadonlySet<string>): Promise<Record<string, string[]>> {
  const found = new Map<string, Set<string>>();
  const readable = operations.filter(
    (operation) => operation.method === 'GET' && operation.path.startsWith('/v1/') && operation.credentials?.includes('dashboard_token'),
  );
  for (const operation of readable.filter((candidate) => candidate.pathParams.length === 0)) {
    const query = operation.queryParams.some((parameter) => parameter.name === 'limit') ? '?limit=100' : '';
    collectIds((await server.request('GET', `${operation.path}${query}`, { token })).body, found);
  }
  for (const operation of readable.filter((candidate) => candidate.pathParams.length === 1)) {
    const prefix = operation.pathParams[0]!.schema.pattern?.match(/^\^([a-z]+)_/)?.[1];
    const id = prefix ? [...(found.get(prefix) ?? [])][0] : undefined;
    if (id) collectIds((await server.request('GET', operation.path.replace(/\{[^}]+\}/, id), { token })).body, found);
  }
  return Object.fromEntries([...found].map(([prefix, ids]) => [prefix, [...ids].filter((id) => !exclude.has(id)).sort()]));
}

async function created(server: TestServer, token: string, path: string, body: unknown): Promise<{ id: string }> {
  const response = await server.request('POST', path, { token, body, headers: { 'idempotency-key': `fuzz-setup-${randomBytes(8).toString('hex')}` } });
  assert.ok(response.status === 200 || response.status === 201, `POST ${path} for the fuzz's world: ${response.status} ${response.text}`);
  return response.body;
}

/** An organization with a number, a customer who wrote, a template, a webhook endpoint with a delivery, a note, a notification and a schedule. */
async function populate(server: TestServer, owner: SignedUp, receiverUrl: string) {
  const connection = await createConnection(server, owner);
  const message = await inbound(server, connection);
  const template = await defineTemplate(server, owner.token, connection, { name: 'fuzz_notice', category: 'utility', text: 'Hello {{1}}', examples: ['Ana'] });
  const endpoint = await created(server, owner.token, '/v1/webhook-endpoints', { url: receiverUrl, events: ['message.received'] });
  await created(server, owner.token, `/v1/webhook-endpoints/${endpoint.id}/test`, undefined);
  await created(server, owner.token, `/v1/conversations/${message.conversation_id}/notes`, { body: 'A note to fuzz.' });
  const parameters = { body: ['Ana'] };
  await created(server, owner.token, '/v1/notifications', { connection_id: connection.id, template: { id: template.id, parameters }, to: '+15550001234' });
  await created(server, owner.token, '/v1/schedules', {
    recurrence: { type: 'interval', every_seconds: 86_400 },
    target: { type: 'notification', connection_id: connection.id, template: { id: template.id }, parameters, to: ['+15550001234'] },
  });
  await settle(server);
  return { connection };
}

/** The fuzz's server and world, closed when `scope` ends. With TEST_REDIS_URL the buckets live in Redis, as in production. */
export async function startFuzzServer(scope: Scope): Promise<FuzzSetup> {
  const redisUrl = process.env.TEST_REDIS_URL;
  const server = await startServer(scope, {
    env: {
      // The limiter runs on every request (its headers are asserted) but never refuses: a 429 would stop a case short of what it tests.
      RATE_LIMIT_CREDENTIAL_MULTIPLIER: '1000000',
      RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '1000000',
      ...(redisUrl ? { REDIS_URL: redisUrl, RATE_LIMIT_KEY_PREFIX: `fuzz-${randomBytes(4).toString('hex')}` } : {}),
    },
  });
  const document = await server.request<OpenApiDocument>('GET', '/v1/openapi.json');
  assert.equal(document.status, 200, document.text);
  const operations = operationsOf(document.body);

  const receiver = await startReceiver(scope);
  const fuzzing = await signUp(server, { organizationName: 'Fuzzing' });
  const other = await signUp(server, { organizationName: 'Another' });
  const { connection } = await populate(server, fuzzing, receiver.url);
  await populate(server, other, receiver.url);
  const organizationKey = await createKey(server, fuzzing.token, { kind: 'organization', mode: 'live', scopes: [...ORGANIZATION_KEY_ALLOWED_SCOPES] });
  const connectionKey = await createKey(server, fuzzing.token, { kind: 'connection', mode: 'live', connection_id: connection.id });
  // A key of its own for the key operations to revoke and rotate: never the ones the fuzz sends with.
  await createKey(server, fuzzing.token, { kind: 'organization', mode: 'live', name: 'Fuzzed' });
  await createKey(server, other.token, { kind: 'organization', mode: 'live', name: 'Another' });

  const world: World = {
    ids: await harvest(server, fuzzing.token, operations, new Set([organizationKey.id, connectionKey.id])),
    otherIds: await harvest(server, other.token, operations, new Set()),
    named: {
      provider_version: 'v24.0',
      version: 'v24.0',
      node: connection.phone_number_id,
      phone_number_id: connection.phone_number_id,
      id: connection.phone_number_id,
      edge: 'messages',
    },
    receiverUrl: receiver.url,
    now: server.clock.now(),
  };
  const unlimited = new Set(
    server.app.accessTable
      .filter((row) => row.access.public && row.access.rateLimit === false)
      .map((row) => `${row.method} ${row.url.replace(/:(\w+)/g, '{$1}')}`),
  );
  return {
    server,
    operations,
    world,
    target: {
      url: server.url,
      credentials: { organization_key: organizationKey.key, connection_key: connectionKey.key, dashboard_token: fuzzing.token },
      unlimited,
    },
  };
}
