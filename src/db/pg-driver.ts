import { createRequire } from 'node:module';
import type Pg from 'pg';

const require = createRequire(import.meta.url);
let driver: typeof Pg | undefined;

/**
 * The `pg` driver, loaded the first time a store on PostgreSQL opens: a process on SQLite (the
 * embedded default) never loads it, which keeps about 8 MiB off its resident memory. Loaded with
 * `require` because opening a store is synchronous; `pg` is CommonJS, so this is the same module
 * object an `import` would give.
 */
export function pgDriver(): typeof Pg {
  driver ??= require('pg') as typeof Pg;
  return driver;
}
