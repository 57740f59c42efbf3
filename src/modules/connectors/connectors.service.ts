import type { Db } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ConnectorAccountsTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import type { GuardedHttp, GuardedResult } from '../../lib/guarded-http.ts';
import { newId } from '../../lib/ids.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import type { Mode } from '../credentials/scopes.schemas.ts';
import { CONNECTORS, checkFields, connectorOf, credentialHeaders, secretHint, testPathOf } from './catalogue.ts';
import type { Connector, ConnectorAccount, ConnectorAccountStatus, ConnectorId, CreateConnectorAccountInput } from './connectors.schemas.ts';
import type { ConnectorAccountScope, ConnectorsStore } from './connectors.store.ts';

/** The largest answer a connector request reads; a larger one is an error, not a truncated answer. */
export const MAX_CONNECTOR_RESPONSE_BYTES = 256 * 1024;
export const MAX_CONNECTOR_TIMEOUT_MS = 10_000;
const USER_AGENT = 'MessagingService-Connectors/1.0';

function toAccount(row: ConnectorAccountsTable): ConnectorAccount {
  return {
    id: row.id,
    object: 'connector_account',
    connector: row.connector as ConnectorId,
    name: row.name,
    status: row.status as ConnectorAccountStatus,
    mode: row.mode as Mode,
    connection_id: row.connection_id,
    base_url: row.base_url,
    allowed_hosts: JSON.parse(row.allowed_hosts) as string[],
    secret_hint: row.secret_hint,
    last_verified_at: row.last_verified_at,
    last_used_at: row.last_used_at,
    last_error: row.last_error,
    created_by: row.created_by,
    created_at: row.created_at,
  };
}

function scopeOf(principal: Principal): ConnectorAccountScope {
  return { organizationId: principal.organizationId, connectionId: principal.connectionId ?? undefined, mode: principal.mode === 'test' ? 'test' : undefined };
}

/** Who uses an account: a run or a deploy, of this organization, mode and (maybe) connection. */
export interface AccountUser {
  organizationId: string;
  mode: string;
  connectionId: string | null;
}

/** A request through an account, rendered: `url` from `resolve`, the body as JSON text. */
export interface ConnectorRequest {
  method: string;
  url: string;
  body: string | undefined;
  timeoutMs: number;
  idempotencyKey: string;
}

/**
 * What a request through an account came to. `failed` is everything without an answer worth
 * branching on (refused, unreachable, timed out, too large), with the catalogue's code and whether
 * trying again can help.
 */
export type ConnectorResult =
  | { kind: 'response'; status: number; headers: Record<string, string>; body: unknown }
  | {
      kind: 'failed';
      code: 'url_not_allowed' | 'invalid_state' | 'provider_timeout' | 'provider_unavailable' | 'body_too_large';
      message: string;
      retryable: boolean;
    };

/** A name for the account's base URL without a trailing slash, which paths are appended to. */
function trimmed(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

function parseBody(bytes: Buffer, contentType: string | undefined): unknown {
  const text = bytes.toString('utf8');
  if (contentType !== undefined && /[/+]json\b/i.test(contentType)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // An answer that says JSON but is not stays text: the step still sees what came.
    }
  }
  return text;
}

export interface ConnectorsServiceDeps {
  db: Db;
  clock: Clock;
  store: ConnectorsStore;
  secrets: Pick<SecretBox, 'seal' | 'open'>;
  http: GuardedHttp;
  audit: Pick<AuditEventsService, 'record'>;
  connections: Pick<ConnectionsService, 'getForReference'>;
}

export function createConnectorsService(deps: ConnectorsServiceDeps) {
  const { db, clock, store, secrets, http, audit, connections } = deps;

  async function getRow(executor: Db, principal: Principal, id: string): Promise<ConnectorAccountsTable> {
    const row = await store.find(executor, scopeOf(principal), id);
    if (!row) throw notFound('connector account');
    return row;
  }

  /** The mode and connection an account is bound to: the connection named (or the connection key's), else the key's mode or the one asked for. */
  async function placementOf(principal: Principal, input: CreateConnectorAccountInput): Promise<{ connectionId: string | null; mode: Mode }> {
    const connectionId = input.connection_id ?? principal.connectionId;
    if (connectionId) {
      const connection = await connections.getForReference(db, principal, connectionId, '/connection_id');
      const mode = connection.test ? 'test' : 'live';
      if (input.mode !== undefined && input.mode !== mode) throw invalidParam('/mode', `must be the connection's mode (${mode}), or left out`);
      return { connectionId, mode };
    }
    if (principal.mode !== null && input.mode !== undefined && input.mode !== principal.mode) {
      throw invalidParam('/mode', `must be the key's own mode (${principal.mode}), or left out: an API key's accounts have its mode`);
    }
    return { connectionId: null, mode: principal.mode ?? input.mode ?? 'live' };
  }

  /**
   * The URL a request goes to: a path appended to the base URL, or an absolute URL, with the query
   * added; refused (`url_not_allowed`) unless its scheme is the base URL's and its host one of the
   * account's allowed hosts.
   */
  function urlOf(row: ConnectorAccountsTable, path: string, query: Record<string, string>, param: string): string {
    const base = new URL(row.base_url);
    let url: URL;
    try {
      url = /^https?:\/\//i.test(path) ? new URL(path) : path.startsWith('/') || path === '' ? new URL(trimmed(row.base_url) + path) : new URL('invalid:');
    } catch {
      throw new AppError('url_not_allowed', `The request's path ${JSON.stringify(path.slice(0, 200))} does not make a URL.`, { param });
    }
    if (url.protocol !== base.protocol || url.username !== '' || url.password !== '') {
      throw new AppError('url_not_allowed', `The request's path must start with / (after the base URL) or be a ${base.protocol}// URL on an allowed host.`, {
        param,
      });
    }
    const allowed = JSON.parse(row.allowed_hosts) as string[];
    if (!allowed.includes(url.host)) {
      throw new AppError('url_not_allowed', `The request goes to ${url.host}, which is not among the account's allowed hosts (${allowed.join(', ')}).`, {
        param,
      });
    }
    for (const [name, value] of Object.entries(query)) url.searchParams.append(name, value);
    return url.toString();
  }

  /** Refuses an account that a run or a deploy of `user` may not use: gone, not active, another mode or connection. */
  function assertUsable(row: ConnectorAccountsTable | undefined, user: AccountUser, id: string, param: string): ConnectorAccountsTable {
    if (!row) throw new AppError('resource_not_found', `No such connector account: ${id}.`, { param });
    if (row.status !== 'active') {
      throw new AppError(
        'invalid_state',
        `Connector account ${id} is ${row.status === 'revoked' ? 'disconnected' : row.status}: nothing can call through it.`,
        { param },
      );
    }
    if (row.mode !== user.mode)
      throw new AppError('invalid_state', `Connector account ${id} is a ${row.mode} account; a ${user.mode} automation cannot use it.`, { param });
    if (row.connection_id !== null && row.connection_id !== user.connectionId) {
      throw new AppError('invalid_state', `Connector account ${id} belongs to connection ${row.connection_id}; this automation runs elsewhere.`, { param });
    }
    return row;
  }

  /** Sends a request through an account whose row is in hand, its credentials added last. */
  async function send(
    row: Pick<ConnectorAccountsTable, 'connector'>,
    credentials: Record<string, string>,
    request: Omit<ConnectorRequest, 'idempotencyKey'> & { idempotencyKey?: string },
  ): Promise<GuardedResult> {
    const connector = connectorOf(row.connector as ConnectorId);
    const body = request.body ?? (connector.id === 'webhook' ? '' : undefined);
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': USER_AGENT,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(request.idempotencyKey ? { 'idempotency-key': request.idempotencyKey } : {}),
      ...credentialHeaders(connector, credentials, body ?? '', Math.floor(clock.now().getTime() / 1000)),
    };
    return http.request({
      method: request.method,
      url: request.url,
      headers,
      body,
      timeoutMs: Math.min(request.timeoutMs, MAX_CONNECTOR_TIMEOUT_MS),
      // One byte past the cap tells a body that is exactly the cap from one that is larger.
      read: { keepBytes: MAX_CONNECTOR_RESPONSE_BYTES + 1, maxBytes: MAX_CONNECTOR_RESPONSE_BYTES + 1, budgetMs: request.timeoutMs },
    });
  }

  /** What a result is, for a step: an answer, or a failure with its code and whether a retry may help. */
  function outcomeOf(result: GuardedResult, what: string): ConnectorResult {
    if (result.kind === 'error') {
      if (result.error.startsWith('url_not_allowed') || result.error.startsWith('address_not_allowed')) {
        return {
          kind: 'failed',
          code: 'url_not_allowed',
          message: `${what} was refused: ${result.error} (only public addresses are called).`,
          retryable: false,
        };
      }
      if (result.error === 'timeout') return { kind: 'failed', code: 'provider_timeout', message: `${what} did not answer in time.`, retryable: true };
      return { kind: 'failed', code: 'provider_unavailable', message: `${what} failed: ${result.error}.`, retryable: true };
    }
    if (result.bytesRead > MAX_CONNECTOR_RESPONSE_BYTES) {
      return { kind: 'failed', code: 'body_too_large', message: `${what} answered more than ${MAX_CONNECTOR_RESPONSE_BYTES / 1024} KB.`, retryable: false };
    }
    if (!result.complete) return { kind: 'failed', code: 'provider_timeout', message: `${what} did not finish its answer in time.`, retryable: true };
    return { kind: 'response', status: result.status, headers: result.headers, body: parseBody(result.body, result.headers['content-type']) };
  }

  /** The test request of a new account: its answer must be 2xx, or connecting is refused with why. */
  async function verify(row: Pick<ConnectorAccountsTable, 'connector' | 'base_url'>, credentials: Record<string, string>): Promise<void> {
    const connector = connectorOf(row.connector as ConnectorId);
    const url = trimmed(row.base_url) + testPathOf(connector, credentials);
    const method = connector.test_request.method;
    const body = connector.id === 'webhook' ? JSON.stringify({ type: 'connector.test' }) : undefined;
    const what = `The test request ${method} ${url}`;
    const outcome = outcomeOf(await send(row, credentials, { method, url, body, timeoutMs: MAX_CONNECTOR_TIMEOUT_MS }), what);
    if (outcome.kind === 'failed') {
      const code = outcome.code === 'invalid_state' ? 'provider_unavailable' : outcome.code;
      throw new AppError(code, `${outcome.message} The account was not connected.`, { param: code === 'url_not_allowed' ? '/fields/base_url' : null });
    }
    if (outcome.status < 200 || outcome.status > 299) {
      throw new AppError('provider_rejected', `${what} answered ${outcome.status}; it must answer 2xx with these credentials. The account was not connected.`, {
        extra: { connector_status: outcome.status },
      });
    }
  }

  return {
    catalogue(): Page<Connector> {
      return { object: 'list', data: [...CONNECTORS], has_more: false, next_cursor: null };
    },

    /** Connect: checks the fields and the base URL, runs the connector's test request, and stores the account only if it answered 2xx. */
    async connect(actor: Actor, input: CreateConnectorAccountInput): Promise<ConnectorAccount> {
      const connector = connectorOf(input.connector);
      const { baseUrl, credentials } = checkFields(connector, input.fields);
      await http.checkUrl(baseUrl, '/fields/base_url');
      const base = new URL(baseUrl);
      if (base.search !== '' || base.hash !== '') throw invalidParam('/fields/base_url', 'must not carry a query or a fragment');
      const placement = await placementOf(actor.principal, input);
      const row0 = { connector: input.connector, base_url: base.toString() };
      await verify(row0, credentials);
      const now = clock.now();
      const id = newId('connectorAccount', now.getTime());
      const row: ConnectorAccountsTable = {
        id,
        organization_id: actor.principal.organizationId,
        mode: placement.mode,
        connection_id: placement.connectionId,
        connector: input.connector,
        name: input.name,
        status: 'active',
        base_url: row0.base_url,
        allowed_hosts: JSON.stringify([base.host]),
        credentials: secrets.seal(JSON.stringify(credentials), id),
        secret_hint: secretHint(connector, credentials),
        last_verified_at: now.toISOString(),
        last_used_at: null,
        last_error: null,
        created_by: actor.principal.memberId ?? actor.principal.credentialId,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      };
      await db.transaction().execute(async (trx) => {
        await store.insert(trx, row);
        await audit.record(trx, actor, {
          action: 'connector_account.connected',
          target: { type: 'connector_account', id },
          data: { connector: row.connector },
        });
      });
      return toAccount(row);
    },

    async get(principal: Principal, id: string): Promise<ConnectorAccount> {
      return toAccount(await getRow(db, principal, id));
    },

    async list(
      principal: Principal,
      filters: { status?: ConnectorAccountStatus | undefined; connector?: ConnectorId | undefined },
      page: PageRequest,
    ): Promise<Page<ConnectorAccount>> {
      return mapPage(await store.list(db, scopeOf(principal), filters, page), toAccount);
    },

    /** Disconnect: the secrets are wiped and the account is `revoked`; steps using it fail from now on. */
    async disconnect(actor: Actor, id: string): Promise<ConnectorAccount> {
      return db.transaction().execute(async (trx) => {
        const row = await store.lock(trx, scopeOf(actor.principal), id);
        if (!row) throw notFound('connector account');
        if (row.status === 'revoked') throw new AppError('invalid_state', `Connector account ${id} is already disconnected.`);
        const changes = { status: 'revoked', credentials: null, updated_at: clock.now().toISOString() } as const;
        await store.update(trx, id, changes);
        await audit.record(trx, actor, { action: 'connector_account.disconnected', target: { type: 'connector_account', id }, data: {} });
        return toAccount({ ...row, ...changes });
      });
    },

    /** Refuses (throws, `param` as given) an account the deploy of an automation of `user` may not reference. */
    async assertUsableForDeploy(executor: Db, user: AccountUser, id: string, param: string): Promise<void> {
      assertUsable(await store.findOfOrganization(executor, user.organizationId, id), user, id, param);
    },

    /** The URL a step's request goes to through the account; throws (`invalid_state`, `url_not_allowed`, ...) when it may not go. */
    async resolve(executor: Db, user: AccountUser, id: string, target: { path: string; query: Record<string, string> }, param: string): Promise<string> {
      const row = assertUsable(await store.findOfOrganization(executor, user.organizationId, id), user, id, param);
      return urlOf(row, target.path, target.query, param);
    },

    /**
     * Calls through the account: re-reads it (a disconnect since the request was recorded refuses the
     * call), checks the host again, adds the credentials and sends through the guarded client. Never
     * inside a transaction; never throws for what the remote side did.
     */
    async call(user: AccountUser, id: string, request: ConnectorRequest): Promise<ConnectorResult> {
      let row: ConnectorAccountsTable;
      try {
        row = assertUsable(await store.findOfOrganization(db, user.organizationId, id), user, id, '/connector_account_id');
        const url = new URL(request.url);
        if (!(JSON.parse(row.allowed_hosts) as string[]).includes(url.host)) throw new AppError('url_not_allowed', `${url.host} is not an allowed host.`);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        return { kind: 'failed', code: error.code === 'url_not_allowed' ? 'url_not_allowed' : 'invalid_state', message: error.message, retryable: false };
      }
      const credentials = JSON.parse(secrets.open(row.credentials!, row.id)) as Record<string, string>;
      const result = await send(row, credentials, request);
      await store.update(db, row.id, { last_used_at: clock.now().toISOString() });
      return outcomeOf(result, `${request.method} ${request.url}`);
    },
  };
}

export type ConnectorsService = ReturnType<typeof createConnectorsService>;
