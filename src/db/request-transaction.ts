import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type TransactionSettings,
} from 'kysely';
import { transactionScope, type ScopedTransaction } from '../lib/transaction-scope.ts';

/**
 * One transaction per write request. A write route's handler runs inside a `RequestTransaction`:
 * every query the request makes (on the root handle or in a `db.transaction()` of its own) joins it,
 * and it commits once, after the response is serialized and the Idempotency-Key's answer is written
 * beside the work. So a crash leaves either nothing or the work with its answer, and a request
 * costs one durable commit, whatever number of services it passes through.
 *
 * The joining happens in the driver rather than in the services: a service keeps calling
 * `db.transaction()` and `db.selectFrom()` as it would outside a request, and each of its
 * transactions becomes a savepoint of the request's one, so it is still all-or-nothing on its own
 * (a unique violation it catches rolls back only its part, on PostgreSQL too).
 *
 * A request that calls a remote service (the provider, a webhook receiver) must not hold one open
 * across the call: on SQLite it would stop every other request for the call's duration. Such routes
 * declare it and run outside; `assertNoRequestTransaction` (lib/transaction-scope.ts) guards the
 * outbound calls.
 */

type State = 'open' | 'committed' | 'rolled back';

export class RequestTransaction implements ScopedTransaction {
  readonly #driver: JoiningDriver;
  readonly connection: DatabaseConnection;
  #state: State = 'open';
  #savepoints = 0;
  readonly #afterCommit = new Set<() => void>();

  constructor(driver: JoiningDriver, connection: DatabaseConnection) {
    this.#driver = driver;
    this.connection = connection;
  }

  get isOpen(): boolean {
    return this.#state === 'open';
  }

  ownedBy(driver: JoiningDriver): boolean {
    return this.#driver === driver;
  }

  /** Runs `fn` with every query it makes, however deep, joining this transaction. */
  run<T>(fn: () => T): T {
    return transactionScope.run(this, fn);
  }

  afterCommit(fn: () => void): void {
    this.#afterCommit.add(fn);
  }

  async commit(): Promise<void> {
    this.#assertOpen('commit');
    try {
      await this.#driver.commit(this);
      this.#state = 'committed';
    } catch (error) {
      await this.rollback();
      throw error;
    }
    // Outside this transaction's scope: what they start must not look for it.
    transactionScope.outside(() => {
      for (const fn of this.#afterCommit) fn();
    });
  }

  /**
   * Rolls back and lets the connection go; a second call, or one after a failed commit, does nothing.
   * It never throws: it runs where a request has already failed, and a rollback that fails leaves
   * nothing to undo, since the connection broke (the server ends a transaction whose connection it
   * lost) and the driver discards it rather than lend it again.
   */
  async rollback(): Promise<void> {
    if (!this.isOpen) return;
    this.#state = 'rolled back';
    await this.#driver.rollback(this).catch(() => undefined);
  }

  /** A service's own `db.transaction()` inside the request: a savepoint, so that it stays all-or-nothing. */
  async beginNested(): Promise<void> {
    this.#assertOpen('begin');
    this.#savepoints++;
    await this.connection.executeQuery(CompiledQuery.raw(`savepoint request_${this.#savepoints}`));
  }

  async endNested(outcome: 'commit' | 'rollback'): Promise<void> {
    const name = `request_${this.#savepoints}`;
    this.#savepoints--;
    if (outcome === 'rollback') await this.connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${name}`));
    await this.connection.executeQuery(CompiledQuery.raw(`release savepoint ${name}`));
  }

  #assertOpen(what: string): void {
    if (!this.isOpen) throw new Error(`cannot ${what}: the request transaction is already ${this.#state}`);
  }
}

/** Serialises the users of a backend that has one connection (SQLite): what Kysely does above the driver otherwise. */
class Mutex {
  #tail: Promise<void> = Promise.resolve();

  lock(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((resolve) => (release = resolve));
    const acquired = this.#tail.then(() => release);
    this.#tail = this.#tail.then(() => next);
    return acquired;
  }
}

/**
 * The backend's driver, with connections lent to the open request transaction of the calling
 * context. Kysely serialises a single-connection backend above the driver, which would make a
 * request's own queries wait for its transaction; the lock is taken here instead, where a query
 * that joins can pass it.
 */
class JoiningDriver implements Driver {
  readonly #inner: Driver;
  readonly #mutex: Mutex | undefined;
  readonly #releases = new Map<DatabaseConnection, () => void>();
  readonly #lent = new WeakMap<DatabaseConnection, RequestTransaction>();
  #ready: Promise<void> | undefined;

  constructor(inner: Driver, singleConnection: boolean) {
    this.#inner = inner;
    this.#mutex = singleConnection ? new Mutex() : undefined;
  }

  init(): Promise<void> {
    this.#ready ??= this.#inner.init().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  async open(): Promise<RequestTransaction> {
    await this.init();
    const connection = await this.#acquireOwn();
    try {
      await this.#inner.beginTransaction(connection, {});
    } catch (error) {
      await this.#releaseOwn(connection);
      throw error;
    }
    const transaction = new RequestTransaction(this, connection);
    this.#lent.set(connection, transaction);
    return transaction;
  }

  async commit(transaction: RequestTransaction): Promise<void> {
    await this.#inner.commitTransaction(transaction.connection);
    await this.#return(transaction);
  }

  async rollback(transaction: RequestTransaction): Promise<void> {
    try {
      await this.#inner.rollbackTransaction(transaction.connection);
    } finally {
      await this.#return(transaction);
    }
  }

  async #return(transaction: RequestTransaction): Promise<void> {
    this.#lent.delete(transaction.connection);
    await this.#releaseOwn(transaction.connection);
  }

  #joined(): RequestTransaction | undefined {
    const transaction = transactionScope.current();
    return transaction instanceof RequestTransaction && transaction.ownedBy(this) ? transaction : undefined;
  }

  async #acquireOwn(): Promise<DatabaseConnection> {
    const release = await this.#mutex?.lock();
    try {
      const connection = await this.#inner.acquireConnection();
      if (release) this.#releases.set(connection, release);
      return connection;
    } catch (error) {
      release?.();
      throw error;
    }
  }

  async #releaseOwn(connection: DatabaseConnection): Promise<void> {
    try {
      await this.#inner.releaseConnection(connection);
    } finally {
      const release = this.#releases.get(connection);
      this.#releases.delete(connection);
      release?.();
    }
  }

  acquireConnection(): Promise<DatabaseConnection> {
    const joined = this.#joined();
    return joined ? Promise.resolve(joined.connection) : this.#acquireOwn();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    if (!this.#lent.has(connection)) await this.#releaseOwn(connection);
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const lent = this.#lent.get(connection);
    return lent ? lent.beginNested() : this.#inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    const lent = this.#lent.get(connection);
    return lent ? lent.endNested('commit') : this.#inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const lent = this.#lent.get(connection);
    return lent ? lent.endNested('rollback') : this.#inner.rollbackTransaction(connection);
  }

  destroy(): Promise<void> {
    return this.#inner.destroy();
  }
}

/** Wraps a Kysely dialect so that its queries join the calling request's transaction. */
export class JoiningDialect implements Dialect {
  readonly #inner: Dialect;
  readonly #driver: JoiningDriver;
  readonly #adapter: DialectAdapter;

  constructor(inner: Dialect) {
    this.#inner = inner;
    const adapter = inner.createAdapter();
    this.#driver = new JoiningDriver(inner.createDriver(), adapter.supportsMultipleConnections === false);
    // The driver serialises a single-connection backend itself (above), so Kysely must not as well.
    this.#adapter = Object.create(adapter, { supportsMultipleConnections: { value: true } }) as DialectAdapter;
  }

  /** Opens a request transaction: on SQLite it takes the write lock (`begin immediate`) until it ends. */
  openRequestTransaction(): Promise<RequestTransaction> {
    return this.#driver.open();
  }

  createDriver(): Driver {
    return this.#driver;
  }

  createAdapter(): DialectAdapter {
    return this.#adapter;
  }

  createQueryCompiler(): QueryCompiler {
    return this.#inner.createQueryCompiler();
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return this.#inner.createIntrospector(db);
  }
}
