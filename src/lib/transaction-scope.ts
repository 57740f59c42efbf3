import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Which request transaction the running code belongs to (src/db/request-transaction.ts). It lives
 * here, with no knowledge of the database, so that the code that calls out (the provider's HTTP
 * client, the webhook sender) can refuse to run inside one without depending on the store.
 */
export interface ScopedTransaction {
  readonly isOpen: boolean;
  /** Runs `fn` once the transaction has committed (not at all if it rolls back). */
  afterCommit(fn: () => void): void;
}

const current = new AsyncLocalStorage<ScopedTransaction>();

export const transactionScope = {
  /** The open transaction the calling code runs in, if any. */
  current(): ScopedTransaction | undefined {
    const transaction = current.getStore();
    return transaction?.isOpen ? transaction : undefined;
  },

  run<T>(transaction: ScopedTransaction, fn: () => T): T {
    return current.run(transaction, fn);
  },

  /** Runs `fn` outside any request transaction: work a request starts that must not join it. */
  outside<T>(fn: () => T): T {
    return current.exit(fn);
  },
};

/**
 * Runs `fn` once what the calling code wrote is visible to others: after its request transaction
 * commits, or at once outside one. A worker woken from inside a request would look for the request's
 * job before it exists for anyone else, then sleep a poll interval.
 */
export function whenCommitted(fn: () => void): void {
  const transaction = transactionScope.current();
  if (transaction) transaction.afterCommit(fn);
  else fn();
}

/**
 * Called before a remote call: holding a request transaction across one would stop every other
 * writer (on SQLite, every other request) for the call's duration. A route whose handler calls out
 * declares `config.waitsOnNetwork` and runs outside one; this turns a forgotten declaration into an error
 * the route's tests meet, instead of a stall under load.
 */
export function assertNoRequestTransaction(what: string): void {
  if (transactionScope.current()) {
    throw new Error(`${what} was called inside a request transaction: declare the route with config.waitsOnNetwork, so that it runs outside one`);
  }
}
