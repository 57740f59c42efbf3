/**
 * The test harness: a real listening server on a fresh store, talked to over HTTP.
 *
 * The store is a temporary SQLite file by default. With TEST_DATABASE_URL set, each server gets a
 * PostgreSQL database of its own (pg-test-database.ts), dropped when the server closes; if that
 * server cannot be reached the test fails (it never quietly falls back to SQLite).
 *
 * Everything here that opens something takes a `Scope` first and registers its own clean-up there,
 * so no test closes a server or a store by hand: see docs/testing.md.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { createApp, type App } from '../src/app.ts';
import { loadConfig, type Config } from '../src/config/config.ts';
import { migrateToLatest, openStore, type Store, type StoreOptions } from '../src/db/connect.ts';
import { ManualClock } from '../src/lib/clock.ts';
import { createPgTestDatabase } from './pg-test-database.ts';

/**
 * Where a test's resources register their clean-up. A test's own context (`async (t) => …`) is one;
 * a `describe` block gets one from `suiteScope()`. Clean-ups run in the order they were registered,
 * after the test (or the suite) has finished, whether it passed or failed.
 */
export interface Scope {
  after(cleanup: () => unknown): void;
}

/**
 * The scope of the enclosing `describe` block, for what its tests share (a server started in
 * `before`). Call it in the describe body itself, not inside a hook: node:test gives suites no `after`
 * on their context, and `after()` called from inside a `before` hook would run when that hook ends.
 */
export function suiteScope(): Scope {
  const cleanups: (() => unknown)[] = [];
  after(async () => {
    const failures: unknown[] = [];
    for (const cleanup of cleanups.splice(0)) {
      try {
        await cleanup();
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, 'several clean-ups failed');
  });
  return { after: (cleanup) => void cleanups.push(cleanup) };
}

/** Runs `close` once, however often it is called: tests may close early, the scope closes again. */
function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= close());
}

export interface TestStore {
  store: Store;
  /** On PostgreSQL: the schema the store's tables are in, and the URL of the database of its own that holds it. */
  schema: string | undefined;
  databaseUrl: string | undefined;
  dataDir: string;
  /** Closes what shares this store (servers started with `shareStore`), then drops it. */
  destroy(): Promise<void>;
}

export const usingPostgres = Boolean(process.env.TEST_DATABASE_URL);

/** The scrypt cost of the accounts tests make: the lowest the configuration allows (sandbox mode only). */
export const TEST_PASSWORD_HASH_COST = '10';

/** What shares each store: closed before the store is dropped under them. */
const sharers = new WeakMap<TestStore, Set<() => Promise<void>>>();
/**
 * Registers `close` to run before `shared` is dropped, whatever order the scope's clean-ups run in:
 * a schema dropped under a process still querying it can deadlock with that process.
 */
export function shares(shared: TestStore, close: () => Promise<void>): void {
  const set = sharers.get(shared) ?? new Set();
  sharers.set(shared, set.add(close));
}

/** What a test may watch of the queries a store runs (`StoreOptions`). */
type QueryWatchers = Pick<StoreOptions, 'onQuery' | 'onRecompile'>;

async function openTestStore(options: QueryWatchers): Promise<TestStore> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'msgsvc-'));
  const database = usingPostgres ? await createPgTestDatabase() : undefined;
  const schema = database?.schema;
  const store = openStore({
    databaseUrl: database?.databaseUrl,
    dataDir,
    schema,
    poolSize: 5,
    onQuery: options.onQuery,
    onRecompile: options.onRecompile,
  });
  const testStore: TestStore = {
    store,
    schema,
    databaseUrl: database?.databaseUrl,
    dataDir,
    destroy: once(async () => {
      for (const close of sharers.get(testStore) ?? []) await close();
      await store.close();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }),
  };
  try {
    await migrateToLatest(store, schema);
  } catch (error) {
    await testStore.destroy();
    throw error;
  }
  return testStore;
}

function openAgain(shared: TestStore, database?: StartOptions['database']): { testStore: TestStore; close: () => Promise<void> } {
  const store = openStore({
    databaseUrl: database?.url ?? shared.databaseUrl,
    dataDir: shared.dataDir,
    schema: shared.schema,
    poolSize: 5,
    ...(database?.connectTimeoutMs ? { connectTimeoutMs: database.connectTimeoutMs } : {}),
  });
  const close = once(() => store.close());
  return { testStore: { ...shared, store, destroy: close }, close };
}

/** A fresh, migrated store: its own SQLite file, or its own PostgreSQL database; dropped when `scope` ends. */
export async function createTestStore(scope: Scope, options: QueryWatchers = {}): Promise<TestStore> {
  const testStore = await openTestStore(options);
  scope.after(() => testStore.destroy());
  return testStore;
}

/**
 * Its own connection (pool) to an existing test store's database, as another process would have;
 * closed when `scope` ends, or before the shared store is dropped, whichever comes first.
 */
export function connectAgain(scope: Scope, shared: TestStore): TestStore {
  const { testStore, close } = openAgain(shared);
  shares(shared, close);
  scope.after(close);
  return testStore;
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string | undefined;
  body?: unknown;
  /** Sent as-is, without JSON encoding (for malformed-body tests). */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Aborts the request: a test's bound on how long an answer may take to come (a hang check). */
  signal?: AbortSignal;
}

/** What talks to a service over HTTP: a test server, or a service process started by a test. */
export interface ApiClient {
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
}

/** Requests to the service at `url` (JSON in and out, a bearer token when given). */
export function apiClient(url: string): ApiClient {
  return {
    async request<T>(method: string, requestPath: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      let body: string | undefined;
      if (opts.rawBody !== undefined) body = opts.rawBody;
      else if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(url + requestPath, { method, headers, body, signal: opts.signal ?? null });
      const text = await response.text();
      let parsed: unknown = undefined;
      if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
      return { status: response.status, headers: response.headers, body: parsed as T, text };
    },
  };
}

export interface TestServer {
  app: App;
  url: string;
  clock: ManualClock;
  config: Config;
  testStore: TestStore;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  /** Closes the server and drops its own store (not a shared one); its scope does this by itself. */
  close(): Promise<void>;
}

/** `onQuery` counts the queries the server runs (see `expand`'s query budget); `onRecompile`, SQLite's recompilations. */
export interface StartOptions extends QueryWatchers {
  clock?: ManualClock;
  env?: Record<string, string>;
  /**
   * Serve from an existing store instead of a fresh one, as a second process on the same database
   * would. Closing this server does not destroy that store; destroying the store closes this server.
   */
  shareStore?: TestStore;
  /**
   * With `shareStore` on PostgreSQL: where the server's own pool connects instead of
   * TEST_DATABASE_URL, the same database reached another way (through a proxy a test can cut) or
   * under a name of its own (`application_name`, which finds its connections among other files'),
   * and how long it waits for a connection.
   */
  database?: { url: string; connectTimeoutMs?: number };
}

/**
 * A listening server on a fresh store (or `shareStore`), closed when `scope` ends: a test's context
 * `t` for a server of its own, `suiteScope()` for one that a describe block's tests share.
 */
export async function startServer(scope: Scope, options: StartOptions = {}): Promise<TestServer> {
  const shared = options.shareStore;
  // A fresh store is dropped through the server's own pool, which a cut proxy could not reach.
  if (options.database && !(shared && usingPostgres)) throw new Error('database needs shareStore and TEST_DATABASE_URL');
  const opened = shared ? openAgain(shared, options.database) : undefined;
  const testStore = opened?.testStore ?? (await openTestStore({ onQuery: options.onQuery, onRecompile: options.onRecompile }));
  let started: App | undefined;
  // Registered before anything can fail, so that a server which fails to start still cleans up.
  const close = once(async () => {
    await started?.server.close();
    if (opened) await opened.close();
    else await testStore.destroy();
  });
  if (shared) shares(shared, close);
  scope.after(close);
  const clock = options.clock ?? new ManualClock('2026-06-01T12:00:00.000Z');
  const config = loadConfig({
    DATA_DIR: testStore.dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // Every answer a route writes with JSON.stringify is checked against its schema's serializer.
    VERIFY_NATIVE_JSON: 'true',
    PUBLIC_BASE_URL: 'http://localhost:3000',
    // Every test talks from 127.0.0.1, so the spec's 20 unauthenticated requests a minute would cap
    // a whole file at 20 sign-ups; the rate-limit tests set it back (an empty value means the default).
    RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '100000',
    // Nearly every test makes an account; at the production cost each would take ~100 ms of CPU.
    PASSWORD_HASH_COST: TEST_PASSWORD_HASH_COST,
    ...options.env,
  });
  const app = (started = await createApp({ config, store: testStore.store, clock: clock }));
  await app.server.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.server.address();
  if (!address || typeof address === 'string') throw new Error('server did not bind a port');
  const url = `http://127.0.0.1:${address.port}`;

  const { request } = apiClient(url);

  return {
    app,
    url,
    clock,
    config,
    request,
    testStore,
    close,
  };
}
