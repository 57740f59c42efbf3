/**
 * The test harness: a real listening server on a fresh store, talked to over HTTP.
 *
 * The store is a temporary SQLite file by default. With TEST_DATABASE_URL set, each server gets its
 * own PostgreSQL schema, dropped when the server closes; if that database cannot be reached the
 * test fails (it never quietly falls back to SQLite).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createApp, type App } from '../src/app.ts';
import { loadConfig, type Config } from '../src/config/config.ts';
import { migrateToLatest, openStore, type Store } from '../src/db/connect.ts';
import { ManualClock } from '../src/lib/clock.ts';

export interface TestStore {
  store: Store;
  schema: string | undefined;
  dataDir: string;
  destroy(): Promise<void>;
}

export const usingPostgres = Boolean(process.env.TEST_DATABASE_URL);

/** A fresh, migrated store: its own SQLite file, or its own PostgreSQL schema. */
export async function createTestStore(options: { onQuery?: () => void } = {}): Promise<TestStore> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'msgsvc-'));
  const databaseUrl = process.env.TEST_DATABASE_URL;
  const schema = databaseUrl ? `test_${randomBytes(6).toString('hex')}` : undefined;
  const store = openStore({ databaseUrl, dataDir, schema, poolSize: 5, onQuery: options.onQuery });
  await migrateToLatest(store, schema);
  return {
    store,
    schema,
    dataDir,
    async destroy() {
      if (schema) await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Its own connection (pool) to an existing test store's database, as another process would have. */
export function connectAgain(shared: TestStore): TestStore {
  const store = openStore({ databaseUrl: process.env.TEST_DATABASE_URL, dataDir: shared.dataDir, schema: shared.schema, poolSize: 5 });
  return { ...shared, store, destroy: () => store.close() };
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
}

export interface TestServer {
  app: App;
  url: string;
  clock: ManualClock;
  config: Config;
  testStore: TestStore;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: ManualClock;
  env?: Record<string, string>;
  /**
   * Serve from an existing store instead of a fresh one, as a second process on the same database
   * would. The caller owns it: closing this server does not destroy it.
   */
  shareStore?: TestStore;
  /** Counts the queries the server runs (see `expand`'s query budget). */
  onQuery?: () => void;
}

export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const testStore = options.shareStore ? connectAgain(options.shareStore) : await createTestStore({ onQuery: options.onQuery });
  const ownsStore = !options.shareStore;
  const clock = options.clock ?? new ManualClock('2026-06-01T12:00:00.000Z');
  const config = loadConfig({
    DATA_DIR: testStore.dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    PUBLIC_BASE_URL: 'http://localhost:3000',
    // Every test talks from 127.0.0.1, so the spec's 20 unauthenticated requests a minute would cap
    // a whole file at 20 sign-ups; the rate-limit tests set it back (an empty value means the default).
    RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '100000',
    ...options.env,
  });
  const app = await createApp({ config, store: testStore.store, clock: clock });
  await app.server.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.server.address();
  if (!address || typeof address === 'string') throw new Error('server did not bind a port');
  const url = `http://127.0.0.1:${address.port}`;

  async function request<T>(method: string, requestPath: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(url + requestPath, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = undefined;
    if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  return {
    app,
    url,
    clock,
    config,
    request,
    testStore,
    async close() {
      await app.server.close();
      if (ownsStore) await testStore.destroy();
      else await testStore.store.close();
    },
  };
}
