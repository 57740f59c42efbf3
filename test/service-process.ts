/**
 * The real service (`src/main.ts`) as a child process, for the tests of what only a process shows:
 * start-up, shutdown on a signal, and crashes (SIGKILL) with work in flight.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { shares, TEST_PASSWORD_HASH_COST, type Scope, type TestStore } from './harness.ts';
import { waitFor } from './wait.ts';

const MAIN = path.resolve(import.meta.dirname, '../src/main.ts');

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr. */
  output(): string;
}

/**
 * The suite's compile cache (package.json's test scripts), so that a service process reads its
 * modules from it instead of stripping and compiling them all again: a run starts hundreds.
 */
function compileCache(): Record<string, string> {
  const directory = process.env.NODE_COMPILE_CACHE;
  return directory ? { NODE_COMPILE_CACHE: path.resolve(directory) } : {};
}

/**
 * Starts the service with only `env` (and PATH), so the developer's own environment cannot leak in;
 * killed with SIGKILL when `scope` ends if it still runs, so no process outlives its test, and
 * before `store` (the test store it runs on, by `storeEnv`) is dropped.
 */
export function spawnService(scope: Scope, env: Record<string, string>, store?: TestStore): ServiceProcess {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', PASSWORD_HASH_COST: TEST_PASSWORD_HASH_COST, ...compileCache(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  };
  scope.after(kill);
  // On the test's store (`storeEnv`): gone before the store is dropped, which may come first.
  if (store) shares(store, kill);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

/** What puts a service process on a test's store: its SQLite file, or its PostgreSQL database, schema and master key. */
export function storeEnv(testStore: TestStore): Record<string, string> {
  const { dataDir, schema, databaseUrl } = testStore;
  if (!schema || !databaseUrl) return { DATA_DIR: dataDir };
  // pg applies `options` from the connection string, so the process lands in the test's schema.
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { DATA_DIR: dataDir, DATABASE_URL: url.toString(), MASTER_KEY: readFileSync(path.join(dataDir, 'master.key'), 'utf8').trim() };
}

/**
 * The address the service listens on, once its log says so (LOG_LEVEL info or lower). The deadline
 * only stops a start that hangs: a loaded CI machine can take well over 10 s to start a process.
 */
export async function listeningUrl(service: ServiceProcess, timeoutMs = 30_000): Promise<string> {
  const match = await waitFor(
    () => {
      const found = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(service.output());
      if (!found && service.child.exitCode !== null) throw new Error(`the service exited (${service.child.exitCode}): ${service.output()}`);
      return found;
    },
    { timeoutMs, intervalMs: 20, message: () => `the service to start: ${service.output()}` },
  );
  return match[1]!;
}
