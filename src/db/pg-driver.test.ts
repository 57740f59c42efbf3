import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { usingPostgres } from '../../test/harness.ts';

/**
 * In a process of its own: whether opening a store of the given kind, and a query on it, loaded the
 * `pg` package (CommonJS, so it is in the module cache once loaded, however it was imported).
 */
function loadsPg(databaseUrl: string | undefined): boolean {
  const script = `
    import { createRequire } from 'node:module';
    import { openStore } from ${JSON.stringify(new URL('./connect.ts', import.meta.url).href)};
    const store = openStore(${databaseUrl ? `{ databaseUrl: ${JSON.stringify(databaseUrl)} }` : "{ sqliteFile: ':memory:' }"});
    await store.db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
    await store.close();
    const cache = createRequire(import.meta.url)('node:module')._cache;
    process.stdout.write(String(Object.keys(cache).some((file) => /[\\\\/]node_modules[\\\\/]pg[\\\\/]/.test(file))));
  `;
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }) === 'true';
}

describe(`the PostgreSQL driver (${usingPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  it('is never loaded by a process on SQLite', () => {
    assert.equal(loadsPg(undefined), false);
  });

  if (usingPostgres) {
    it('is loaded when a store on PostgreSQL opens', () => {
      assert.equal(loadsPg(process.env.TEST_DATABASE_URL), true);
    });
  }
});
