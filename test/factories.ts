/** Builders for the records most tests need, made through the API wherever the API can make them. */
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { startServer, type ApiClient, type Scope, type StartOptions, type TestServer } from './harness.ts';

export interface SignedUp {
  token: string;
  refreshCookie: string;
  organizationId: string;
  memberId: string;
  email: string;
  password: string;
}

export async function signUp(server: ApiClient, overrides: { email?: string; organizationName?: string } = {}): Promise<SignedUp> {
  const email = overrides.email ?? `owner-${randomBytes(4).toString('hex')}@example.com`;
  const password = 'correct horse battery staple';
  const response = await server.request('POST', '/auth/signup', {
    body: { email, password, organization_name: overrides.organizationName ?? 'Acme Ltd' },
  });
  assert.equal(response.status, 201, response.text);
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith('refresh_token='));
  assert.ok(cookie, 'sign-up sets the refresh cookie');
  return {
    token: response.body.token,
    refreshCookie: cookie.split(';')[0]!,
    organizationId: response.body.organization.id,
    memberId: response.body.member.id,
    email,
    password,
  };
}

/** Connects a sandbox number through the API, as a user would: any code works, and `coexistence…` makes a coexistence number. */
export async function createConnection(server: ApiClient, owner: { token: string }, options: { test?: boolean; coexistence?: boolean; name?: string } = {}) {
  const response = await server.request('POST', '/v1/connections', {
    token: owner.token,
    body: {
      code: `${options.coexistence ? 'coexistence' : 'code'}-${randomBytes(4).toString('hex')}`,
      test: options.test ?? false,
      coexistence: options.coexistence ?? false,
      name: options.name ?? 'Support line',
    },
  });
  assert.equal(response.status, 201, response.text);
  return response.body;
}

export async function createKey(
  server: ApiClient,
  dashboardToken: string,
  body: { kind: 'organization' | 'connection'; mode: 'live' | 'test'; connection_id?: string; scopes?: string[]; name?: string },
): Promise<{ id: string; key: string; scopes: string[] }> {
  const response = await server.request('POST', '/v1/api-keys', { token: dashboardToken, body });
  assert.equal(response.status, 201, response.text);
  return response.body;
}

/**
 * A one-body template on `connection` through the API, approved by the sandbox's review unless
 * `approve` is false (then it stays pending); answers it as created.
 */
export async function defineTemplate(
  server: TestServer,
  token: string,
  connection: { id: string },
  template: { name: string; category: string; text: string; examples: string[]; approve?: boolean },
): Promise<{ id: string; provider_template_id: string }> {
  const created = await server.request('POST', '/v1/templates', {
    token,
    body: {
      connection_id: connection.id,
      name: template.name,
      language: 'en_US',
      category: template.category,
      components: [{ type: 'body', text: template.text, examples: template.examples }],
    },
  });
  assert.equal(created.status, 201, created.text);
  if (template.approve === false) return created.body;
  const reviewed = await server.request('POST', '/sandbox/control/template-status', {
    body: { template_id: created.body.provider_template_id, status: 'APPROVED' },
  });
  assert.equal(reviewed.status, 200, reviewed.text);
  await settle(server);
  return created.body;
}

/** Asserts the response is our error envelope with this status and code, and returns the error object. */
export function assertError(response: { status: number; body: any; headers: Headers; text: string }, status: number, code: string) {
  assert.equal(response.status, status, response.text);
  const error = response.body?.error;
  assert.ok(error, `expected an error envelope, got ${response.text}`);
  assert.equal(error.code, code, response.text);
  assert.equal(typeof error.type, 'string');
  assert.equal(typeof error.message, 'string');
  assert.ok('param' in error);
  assert.ok(Array.isArray(error.details));
  assert.match(error.doc_url, new RegExp(`/docs/errors/${code}$`));
  assert.equal(error.request_id, response.headers.get('x-request-id'));
  return error;
}

/** A second member of an organization with the given role, logged in: for role and scope tests. */
export async function addMember(
  server: TestServer,
  organizationId: string,
  role: 'owner' | 'admin' | 'agent' | 'viewer',
): Promise<{ token: string; memberId: string; refreshCookie: string; email: string; password: string }> {
  const email = `${role}-${randomBytes(4).toString('hex')}@example.com`;
  const password = 'correct horse battery staple';
  const { hashPassword } = await import('../src/lib/crypto.ts');
  const passwordHash = await hashPassword(password, server.config.passwordHashCost);
  const member = await server.app.store.db
    .transaction()
    .execute((trx) => server.app.services.members.createUserAndMember(trx, { email, name: null, passwordHash, organizationId, role }));
  const login = await server.request('POST', '/auth/login', { body: { email, password } });
  assert.equal(login.status, 200, login.text);
  const cookie = login.headers.getSetCookie().find((c) => c.startsWith('refresh_token='))!;
  return { token: login.body.token, memberId: member.id, refreshCookie: cookie.split(';')[0]!, email, password };
}

/** A listening server with two organizations, for suites proving that one never reaches the other; closed when `scope` ends. */
export async function startServerWithTwoOrganizations(scope: Scope): Promise<{ server: TestServer; alpha: SignedUp; beta: SignedUp }> {
  const server = await startServer(scope);
  return { server, alpha: await signUp(server, { organizationName: 'Alpha' }), beta: await signUp(server, { organizationName: 'Beta' }) };
}

/** A listening server with a signed-up owner: what most suites start with; closed when `scope` ends. */
export async function startServerWithOwner(scope: Scope, options: StartOptions = {}): Promise<{ server: TestServer; owner: SignedUp }> {
  const server = await startServer(scope, options);
  return { server, owner: await signUp(server) };
}

let customers = randomInt(0, 1_000_000);

/** A customer's number as the provider sends `from` (digits only, no `+`), new each time within a test file. */
export function newCustomer(): string {
  return `4477009${String(customers++ % 1_000_000).padStart(6, '0')}`;
}

/**
 * Runs everything the server has to do now, to the end: the sandbox's scheduled status steps and the
 * webhooks it sends, the jobs they queue, the status steps and webhooks those cause in turn, until a
 * round finds nothing left to run. Jobs due later (retries, timers) wait for the clock: move it, then
 * settle again. Fails when `maxRounds` rounds all found work: something keeps making more.
 */
export async function settle(server: TestServer, maxRounds = 10): Promise<void> {
  for (let round = 0; round < maxRounds; round++) {
    await server.app.sandbox?.idle();
    if ((await server.app.worker.drain()) === 0) return;
  }
  const due = await server.app.store.db
    .selectFrom('jobs')
    .select('name')
    .where('status', '=', 'queued')
    .where('run_at', '<=', server.clock.now().toISOString())
    .execute();
  assert.fail(`the server did not settle in ${maxRounds} rounds; still due: ${due.map((job) => job.name).join(', ') || 'nothing'}`);
}

type SandboxMessage = Record<string, unknown> & { type?: string };

/**
 * A message the sandbox delivers to `connection`'s number by webhook (`/inbound`: a customer writes;
 * `/echo`: the owner writes from the business app), settled; answers the stored message.
 */
export async function sandboxMessage(server: TestServer, path: '/inbound' | '/echo', connection: { phone_number_id: string }, body: SandboxMessage) {
  const message: SandboxMessage = { type: 'text', ...body };
  if (message.type === 'text') message.text ??= 'hi';
  const response = await server.request('POST', `/sandbox/control${path}`, { body: { phone_number_id: connection.phone_number_id, ...message } });
  assert.equal(response.status, 200, response.text);
  await settle(server);
  return server.app.store.db.selectFrom('messages').selectAll().where('provider_message_id', '=', response.body.message_id).executeTakeFirstOrThrow();
}

/**
 * A customer's message to `connection`'s number through the sandbox and the provider's webhook,
 * settled: the text 'hi' from a new customer unless `body` says otherwise. Answers the stored message.
 */
export function inbound(server: TestServer, connection: { phone_number_id: string }, body: SandboxMessage = {}) {
  return sandboxMessage(server, '/inbound', connection, { from: newCustomer(), ...body });
}

/** The queued fire jobs of one schedule, as the queue holds them. */
export async function fireJobs(server: TestServer, scheduleId: string) {
  const rows = await server.app.store.db
    .selectFrom('jobs')
    .selectAll()
    .where('name', '=', 'schedule.fire')
    .where('status', '=', 'queued')
    .orderBy('id')
    .execute();
  return rows
    .map((row) => ({
      payload: JSON.parse(row.payload) as { schedule_id: string; scheduled_for: string; revision: number },
      run_at: row.run_at,
      key: row.dedupe_key,
    }))
    .filter((job) => job.payload.schedule_id === scheduleId);
}
