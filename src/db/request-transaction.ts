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
  /** The nested transactions open, innermost last: true for a savepoint, false for one run flat (below). */
  readonly #nested: boolean[] = [];
  /** A nested transaction run flat rolled back: the whole must, and `commit` refuses. */
  #bodyRolledBack = false;
  /**
   * Whether a transaction the caller opens at the outermost level runs flat, without a savepoint of
   * its own: `inRequestTransaction`'s body is such a transaction, and a savepoint for it would only
   * cost two statements (two round trips on PostgreSQL), since its failure fails the whole anyway.
   */
  flattenOutermost = false;
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

  /** Resolves once the work is durable; throws when it is not (and then nothing of it was kept). */
  async commit(): Promise<void> {
    this.#assertOpen('commit');
    try {
      if (this.#bodyRolledBack) throw new Error('a transaction run flat inside this one rolled back, so the whole must');
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
   *
   * Resolves to whether what the transaction read is known to be committed. It is false only on
   * SQLite, when the commit group it ran in (below) failed to commit: an answer made from its reads
   * (a replayed response, a conflict) may then rest on work that was never kept, and the request
   * must answer as a failed commit instead.
   */
  async rollback(): Promise<boolean> {
    if (!this.isOpen) return true;
    this.#state = 'rolled back';
    return this.#driver.rollback(this).catch(() => true);
  }

  /** A service's own `db.transaction()` inside the request: a savepoint, so that it stays all-or-nothing. */
  async beginNested(): Promise<void> {
    this.#assertOpen('begin');
    const flat = this.flattenOutermost && this.#nested.length === 0;
    this.#nested.push(!flat);
    if (flat) return;
    this.#savepoints++;
    await this.connection.executeQuery(CompiledQuery.raw(`savepoint request_${this.#savepoints}`));
  }

  async endNested(outcome: 'commit' | 'rollback'): Promise<void> {
    if (!this.#nested.pop()) {
      if (outcome === 'rollback') this.#bodyRolledBack = true;
      return;
    }
    const name = `request_${this.#savepoints}`;
    this.#savepoints--;
    if (outcome === 'rollback') await this.connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${name}`));
    await this.connection.executeQuery(CompiledQuery.raw(`release savepoint ${name}`));
  }

  #assertOpen(what: string): void {
    if (!this.isOpen) throw new Error(`cannot ${what}: the request transaction is already ${this.#state}`);
  }
}

/**
 * The turn on a backend that has one connection (SQLite): first come, first served, except that a
 * request transaction may be let into the open commit group ahead of other waiters.
 */
class Turns {
  #held = false;
  readonly #waiting: { readonly joinsGroup: boolean; readonly resolve: () => void }[] = [];

  take(joinsGroup: boolean): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push({ joinsGroup, resolve }));
  }

  /** Whether a request transaction waits for the turn, to join the commit group. */
  get groupJoinerWaiting(): boolean {
    return this.#waiting.some((waiter) => waiter.joinsGroup);
  }

  /** Hands the turn to the first request transaction waiting (there must be one). */
  passToGroupJoiner(): void {
    const index = this.#waiting.findIndex((waiter) => waiter.joinsGroup);
    const [next] = this.#waiting.splice(index, 1);
    next!.resolve();
  }

  /** Hands the turn to whoever waits longest, or frees it. */
  pass(): void {
    const next = this.#waiting.shift();
    if (next) next.resolve();
    else this.#held = false;
  }
}

/**
 * Group commit, on SQLite. Its one writer runs the request transactions one after the other, so each
 * would pay a commit of its own: every page it changed written to the WAL, though the next request
 * changes the same pages (the tables' last leaves, the indexes' busiest ones). Instead, the request
 * transactions that arrive while one runs join one SQLite transaction, each after the first in a
 * savepoint of its own (rolled back alone when it fails), and the group commits once when no request
 * transaction waits (`#passTurn`), or after `MAX_GROUP` of them. Each request's commit resolves only
 * when its group's commit has: no answer leaves, and no after-commit work starts, before the work is
 * durable, and a group whose commit fails fails every request in it. Nothing else runs on the
 * connection while a group is open (a query or a transaction outside a request transaction waits
 * for the group's commit), so nothing outside a group reads what it has not yet committed. A member
 * reads the earlier members' work, as it would have after their commits; an answer made from such
 * reads waits for the group too.
 */
const MAX_GROUP = 16;

class CommitGroup {
  readonly connection: DatabaseConnection;
  members = 0;
  /** A member's savepoint could not be rolled back: the group's state is unknown, so it rolls back whole. */
  broken = false;
  /** No member holds the turn: the group waits for its commit, and for a request transaction to join it. */
  lingering = false;
  readonly #outcome = Promise.withResolvers<void>();

  constructor(connection: DatabaseConnection) {
    this.connection = connection;
    // A group with no waiting member that fails must not be an unhandled rejection.
    this.#outcome.promise.catch(() => undefined);
  }

  get committed(): Promise<void> {
    return this.#outcome.promise;
  }

  settle(error: unknown): void {
    if (error === undefined) this.#outcome.resolve();
    else this.#outcome.reject(error);
  }
}

const MEMBER_SAVEPOINT = 'request_transaction';

/**
 * The backend's driver, with connections lent to the open request transaction of the calling
 * context. Kysely serialises a single-connection backend above the driver, which would make a
 * request's own queries wait for its transaction; the turn is taken here instead, where a query
 * that joins can pass it.
 */
class JoiningDriver implements Driver {
  readonly #inner: Driver;
  readonly #turns: Turns | undefined;
  readonly #lent = new WeakMap<DatabaseConnection, RequestTransaction>();
  /** The open commit group (single connection only), while one of its members holds the turn. */
  #group: CommitGroup | undefined;
  /**
   * Each member's group, and whether it has a savepoint: the group's first member needs none, since
   * nothing else is in the group's SQLite transaction while it runs; its rollback is the whole's.
   */
  readonly #memberships = new WeakMap<RequestTransaction, { readonly group: CommitGroup; readonly savepoint: boolean }>();
  #ready: Promise<void> | undefined;

  constructor(inner: Driver, singleConnection: boolean) {
    this.#inner = inner;
    this.#turns = singleConnection ? new Turns() : undefined;
  }

  /** Whether request transactions commit in groups: on a backend of one connection (SQLite). */
  get groupsCommits(): boolean {
    return this.#turns !== undefined;
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
    if (this.#turns) return this.#openInGroup(this.#turns);
    return this.#lend(await this.#begun());
  }

  /** A connection of the backend's, in a transaction of its own. */
  async #begun(): Promise<DatabaseConnection> {
    const connection = await this.#inner.acquireConnection();
    try {
      await this.#inner.beginTransaction(connection, {});
    } catch (error) {
      await this.#inner.releaseConnection(connection);
      throw error;
    }
    return connection;
  }

  async #openInGroup(turns: Turns): Promise<RequestTransaction> {
    let group = this.#group;
    // A group waiting for its commit holds the turn; a request transaction that arrives meanwhile takes it over.
    if (group?.lingering) group.lingering = false;
    else {
      await turns.take(true);
      group = this.#group;
    }
    try {
      group ??= this.#group = new CommitGroup(await this.#begun());
      if (group.members > 0) await group.connection.executeQuery(CompiledQuery.raw(`savepoint ${MEMBER_SAVEPOINT}`));
    } catch (error) {
      if (group) await this.#passTurn(group);
      else turns.pass();
      throw error;
    }
    const savepoint = group.members > 0;
    group.members++;
    const transaction = this.#lend(group.connection);
    this.#memberships.set(transaction, { group, savepoint });
    return transaction;
  }

  #lend(connection: DatabaseConnection): RequestTransaction {
    const transaction = new RequestTransaction(this, connection);
    this.#lent.set(connection, transaction);
    return transaction;
  }

  async commit(transaction: RequestTransaction): Promise<void> {
    const membership = this.#memberships.get(transaction);
    if (!membership) {
      await this.#inner.commitTransaction(transaction.connection);
      await this.#return(transaction);
      return;
    }
    if (membership.savepoint) await transaction.connection.executeQuery(CompiledQuery.raw(`release savepoint ${MEMBER_SAVEPOINT}`));
    await this.#leave(transaction, membership.group);
  }

  async rollback(transaction: RequestTransaction): Promise<boolean> {
    const membership = this.#memberships.get(transaction);
    if (!membership) {
      try {
        await this.#inner.rollbackTransaction(transaction.connection);
      } finally {
        await this.#return(transaction);
      }
      return true;
    }
    const { group } = membership;
    // After a failed commit the member has already left its group: its outcome is the group's.
    const stillMember = this.#lent.get(transaction.connection) === transaction;
    if (stillMember && !membership.savepoint) {
      // The group's first member: the group holds nothing else, and ends with it.
      this.#lent.delete(transaction.connection);
      await this.#end(group, 'discard');
    } else if (stillMember) {
      try {
        await transaction.connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${MEMBER_SAVEPOINT}`));
        await transaction.connection.executeQuery(CompiledQuery.raw(`release savepoint ${MEMBER_SAVEPOINT}`));
      } catch {
        group.broken = true;
      }
      await this.#leave(transaction, group).catch(() => undefined);
    }
    return group.committed.then(
      () => true,
      () => false,
    );
  }

  /** The member's part is done: the turn goes on, and the member waits for its group's commit. */
  async #leave(transaction: RequestTransaction, group: CommitGroup): Promise<void> {
    this.#lent.delete(transaction.connection);
    await this.#passTurn(group);
    await group.committed;
  }

  /**
   * Lets the next request transaction into the group, or commits it (then the turn is anyone's).
   * SQLite's statements run synchronously, so a request transaction begins and ends within one turn
   * of the event loop, and the requests that arrive with it reach their `open` only once it has
   * ended: with none waiting, the group waits for its commit until the event loop has taken in what
   * it read in the same round (`setImmediate` runs after the round's I/O callbacks).
   */
  async #passTurn(group: CommitGroup): Promise<void> {
    const turns = this.#turns!;
    if (!group.broken && group.members < MAX_GROUP) {
      if (turns.groupJoinerWaiting) {
        turns.passToGroupJoiner();
        return;
      }
      group.lingering = true;
      setImmediate(() => {
        if (!group.lingering) return;
        group.lingering = false;
        void this.#end(group, 'commit');
      });
      return;
    }
    await this.#end(group, 'commit');
  }

  /**
   * Commits the group (rolls it back when broken, and discards it when its only member rolled back)
   * and passes the turn on.
   */
  async #end(group: CommitGroup, outcome: 'commit' | 'discard'): Promise<void> {
    const turns = this.#turns!;
    this.#group = undefined;
    try {
      if (group.broken) throw new Error('a request transaction of the commit group could not be rolled back alone');
      if (outcome === 'commit') await this.#inner.commitTransaction(group.connection);
      else await this.#inner.rollbackTransaction(group.connection);
      group.settle(undefined);
    } catch (error) {
      // SQLite may keep the transaction open after a failed COMMIT (SQLITE_BUSY, a full disk).
      await this.#inner.rollbackTransaction(group.connection).catch(() => undefined);
      group.settle(error);
    } finally {
      await this.#inner.releaseConnection(group.connection).catch(() => undefined);
      turns.pass();
    }
  }

  async #return(transaction: RequestTransaction): Promise<void> {
    this.#lent.delete(transaction.connection);
    await this.#inner.releaseConnection(transaction.connection);
  }

  #joined(): RequestTransaction | undefined {
    const transaction = transactionScope.current();
    // A member that has left its commit group no longer has the connection, though it stays open until the group commits.
    return transaction instanceof RequestTransaction && transaction.ownedBy(this) && this.#lent.get(transaction.connection) === transaction
      ? transaction
      : undefined;
  }

  async #acquireOwn(): Promise<DatabaseConnection> {
    await this.#turns?.take(false);
    try {
      return await this.#inner.acquireConnection();
    } catch (error) {
      this.#turns?.pass();
      throw error;
    }
  }

  acquireConnection(): Promise<DatabaseConnection> {
    const joined = this.#joined();
    return joined ? Promise.resolve(joined.connection) : this.#acquireOwn();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    if (this.#lent.has(connection)) return;
    try {
      await this.#inner.releaseConnection(connection);
    } finally {
      this.#turns?.pass();
    }
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

  async destroy(): Promise<void> {
    const group = this.#group;
    if (group?.lingering) {
      group.lingering = false;
      await this.#end(group, 'commit');
    }
    await this.#inner.destroy();
  }
}

/**
 * Runs a write that does not come through a write route (a provider's webhook; the worker's claims,
 * settles and records of accepted sends) so that it commits with the request transactions'. Resolves
 * once the work is durable; rejects when `fn` or the commit fails, and then nothing of it was kept.
 */
export type CommitWithRequests = <T>(fn: () => Promise<T>) => Promise<T>;

/**
 * `fn` in a request transaction of its own, committed: on SQLite it joins the open commit group. A
 * `db.transaction()` that `fn` opens at the outermost level runs flat, in this one: if it rolls
 * back, the whole does.
 */
async function inRequestTransaction<T>(transaction: RequestTransaction, fn: () => Promise<T>): Promise<T> {
  transaction.flattenOutermost = true;
  let result: T;
  try {
    result = await transaction.run(fn);
  } catch (error) {
    await transaction.rollback();
    throw error;
  }
  await transaction.commit();
  return result;
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

  /**
   * On SQLite, `fn` runs in a request transaction of its own, which joins the open commit group. On
   * PostgreSQL nothing groups (each transaction has a connection of its own), so `fn` runs as it is:
   * a transaction around it would only add two round trips and hold a connection longer.
   */
  readonly commitWithRequests: CommitWithRequests = async (fn) => (this.#driver.groupsCommits ? inRequestTransaction(await this.#driver.open(), fn) : fn());

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
