import assert from 'node:assert/strict';

/** The error a promise rejects with, checked to be a `kind` when one is given; fails if it resolves. */
export async function rejectionOf<T = unknown>(promise: Promise<unknown>, kind?: abstract new (...args: never[]) => T): Promise<T> {
  try {
    await promise;
  } catch (error) {
    if (kind) assert.ok(error instanceof kind, `expected a ${kind.name}, got ${String(error)}`);
    return error as T;
  }
  assert.fail('expected a rejection');
}
