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
  #groupFailure: unknown;
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
    await this.#driver.rollback(this).catch((error: unknown) => {
      if (error instanceof GroupCommitFailed) this.#groupFailure = error.cause;
    });
  }

  /**
   * Set when this transaction rolled back after requests before it in its group (group commit, on
   * SQLite) and that group then failed to commit: whatever it read of their work never existed, so
   * an answer made from those reads (a replay of a concurrent first request's, a conflict with a row
   * it wrote) must not be given. The cause of the failed commit; undefined otherwise.
   */
  get groupFailure(): unknown {
    return this.#groupFailure;
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

type Holder = 'request' | 'other';

/**
 * Serialises the users of a backend that has one connection (SQLite): what Kysely does above the
 * driver otherwise. First come, first served; it tells what the next in line is, so that a request
 * transaction can leave the connection to the next request mid-transaction (group commit, below).
 */
class Mutex {
  #held = false;
  readonly #queue: { holder: Holder; grant: () => void }[] = [];

  lock(holder: Holder): Promise<() => void> {
    const release = () => this.#release();
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve(release);
    }
    return new Promise((resolve) => this.#queue.push({ holder, grant: () => resolve(release) }));
  }

  /** Who waits first for the lock, if anyone. */
  next(): Holder | undefined {
    return this.#queue[0]?.holder;
  }

  #release(): void {
    const next = this.#queue.shift();
    if (next) next.grant();
    else this.#held = false;
  }
}

/**
 * Group commit, on a backend with one connection. Write requests there run one after the other,
 * each holding the connection from its first query to its commit, and each commit writes the pages
 * the request changed to the WAL (60–110 µs a commit, measured under the send and inbound benches,
 * the largest single cost of a write request). So a request transaction that ends while another
 * request is already waiting for the connection does not commit: it releases its savepoint (every
 * request runs in one, `MEMBER_SAVEPOINT`) and hands the open transaction to the next request, and
 * its own `commit()` resolves when the group's commit does. The request that ends with no request
 * waiting (or the group's `MAX_GROUP`th) commits them all at once.
 *
 * What a request sees of the others is unchanged: they ran before it, on the same connection, and a
 * reader outside the group (a worker, another process) waits for the group's commit as it waited for
 * each request's. A request that fails rolls back to its savepoint alone. A commit that fails fails
 * every request of the group, and nothing of any of them is kept: each answers that its commit
 * failed, and a retry with its Idempotency-Key does the work once. A process that dies with a group
 * open loses the whole group uncommitted, none of whose answers had been sent.
 */
const MAX_GROUP = 16;

/** A member rolled back; the group it read from failed to commit (`RequestTransaction.groupFailure`). */
class GroupCommitFailed extends Error {
  constructor(cause: unknown) {
    super('the group commit this request transaction read from failed', { cause });
  }
}
const MEMBER_SAVEPOINT = 'request_member';

interface Group {
  connection: DatabaseConnection;
  size: number;
  /** The members that ended and wait for the group's commit. */
  waiting: { resolve: () => void; reject: (error: unknown) => void }[];
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
  #group: Group | undefined;
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
    if (this.#mutex) return this.#joinGroup(this.#mutex);
    const connection = await this.#acquireOwn('request');
    try {
      await this.#inner.beginTransaction(connection, {});
    } catch (error) {
      await this.#releaseOwn(connection);
      throw error;
    }
    return this.#lend(connection);
  }

  async commit(transaction: RequestTransaction): Promise<void> {
    if (this.#mutex) return this.#endMember(transaction, 'commit');
    await this.#inner.commitTransaction(transaction.connection);
    await this.#return(transaction);
  }

  async rollback(transaction: RequestTransaction): Promise<void> {
    if (this.#mutex) return this.#endMember(transaction, 'rollback');
    try {
      await this.#inner.rollbackTransaction(transaction.connection);
    } finally {
      await this.#return(transaction);
    }
  }

  #lend(connection: DatabaseConnection): RequestTransaction {
    const transaction = new RequestTransaction(this, connection);
    this.#lent.set(connection, transaction);
    return transaction;
  }

  /** Takes the connection in turn, and joins the open group or begins one; either way within a savepoint of its own. */
  async #joinGroup(mutex: Mutex): Promise<RequestTransaction> {
    const release = await mutex.lock('request');
    let group = this.#group;
    if (!group) {
      let connection: DatabaseConnection;
      try {
        connection = await this.#inner.acquireConnection();
      } catch (error) {
        release();
        throw error;
      }
      try {
        await this.#inner.beginTransaction(connection, {});
      } catch (error) {
        await this.#inner.releaseConnection(connection).finally(release);
        throw error;
      }
      group = this.#group = { connection, size: 0, waiting: [] };
    }
    this.#releases.set(group.connection, release);
    group.size++;
    try {
      await group.connection.executeQuery(CompiledQuery.raw(`savepoint ${MEMBER_SAVEPOINT}`));
    } catch (error) {
      // The connection failed under the group: it cannot commit, so none of it may.
      await this.#closeGroup(error);
      throw error;
    }
    return this.#lend(group.connection);
  }

  /**
   * A member's end: its savepoint released (or rolled back), then the group handed to the next request
   * in line, or committed. A member that commits answers once the group has committed.
   */
  async #endMember(transaction: RequestTransaction, outcome: 'commit' | 'rollback'): Promise<void> {
    const group = this.#group;
    // Already ended: a member whose group failed is rolled back by its RequestTransaction afterwards.
    if (!group || this.#lent.get(group.connection) !== transaction) return;
    this.#lent.delete(group.connection);
    try {
      if (outcome === 'rollback') await group.connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${MEMBER_SAVEPOINT}`));
      await group.connection.executeQuery(CompiledQuery.raw(`release savepoint ${MEMBER_SAVEPOINT}`));
    } catch (error) {
      await this.#closeGroup(error);
      if (outcome === 'commit') throw error;
      return;
    }
    // A member that commits waits for the group's commit; one that rolled back waits too when requests
    // before it are in the group, since it may have answered from their work (`groupFailure`).
    const waits = outcome === 'commit' || group.waiting.length > 0;
    const closed = waits ? new Promise<void>((resolve, reject) => group.waiting.push({ resolve, reject })) : undefined;
    if (this.#mutex!.next() === 'request' && group.size < MAX_GROUP) {
      // The next request takes the connection as it is, mid-transaction.
      this.#takeRelease(group.connection)();
    } else {
      await this.#closeGroup();
    }
    if (outcome === 'commit') return closed;
    await closed?.catch((error: unknown) => {
      throw new GroupCommitFailed(error);
    });
  }

  /** Commits the group (or, given the error that broke it, rolls it back), answers its members and lets the connection go. */
  async #closeGroup(broken?: unknown): Promise<void> {
    const group = this.#group!;
    this.#group = undefined;
    this.#lent.delete(group.connection);
    let failure = broken;
    if (failure === undefined) {
      try {
        await this.#inner.commitTransaction(group.connection);
      } catch (error) {
        failure = error;
      }
    }
    if (failure !== undefined) await this.#inner.rollbackTransaction(group.connection).catch(() => undefined);
    try {
      await this.#inner.releaseConnection(group.connection);
    } finally {
      this.#takeRelease(group.connection)();
    }
    for (const member of group.waiting) {
      if (failure === undefined) member.resolve();
      else member.reject(failure);
    }
  }

  #takeRelease(connection: DatabaseConnection): () => void {
    const release = this.#releases.get(connection) ?? (() => undefined);
    this.#releases.delete(connection);
    return release;
  }

  async #return(transaction: RequestTransaction): Promise<void> {
    this.#lent.delete(transaction.connection);
    await this.#releaseOwn(transaction.connection);
  }

  #joined(): RequestTransaction | undefined {
    const transaction = transactionScope.current();
    return transaction instanceof RequestTransaction && transaction.ownedBy(this) ? transaction : undefined;
  }

  async #acquireOwn(holder: Holder = 'other'): Promise<DatabaseConnection> {
    const release = await this.#mutex?.lock(holder);
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
      this.#takeRelease(connection)();
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
