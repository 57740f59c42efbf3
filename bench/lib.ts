/**
 * Shared machinery for every benchmark: the service and a bare Fastify baseline, each in its own
 * child process (and any helper a bench needs, such as webhook receivers), driven over IPC; load
 * from autocannon in this process; figures and the `RESULT` lines.
 *
 * The servers run in children because this machine has two cores: a server sharing an event loop
 * with its load generator would measure the two fighting over one thread, not the server.
 *
 * This module is imported by the children too (`reportToParent`), so it loads nothing heavy at the
 * top: autocannon and the store are imported where they are used, keeping them out of the
 * children's memory and start-up.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startCommand, type StartCommand } from '../scripts/start-command.ts';
import { sqliteFileIn } from '../src/db/sqlite-file.ts';
import { PERF_NODE_ARGS, perfDirectory, startPerf } from './perf-profile.ts';

const BENCH_DIR = import.meta.dirname;

// ---------------------------------------------------------------------------------------------
// The IPC protocol between this process and a server child.

type ToChild = { type: 'rss' } | { type: 'stop' } | { type: 'call'; id: number; name: string; args: unknown };
type FromChild =
  | { type: 'listening'; port: number }
  | { type: 'rss'; rss: number }
  | { type: 'reply'; id: number; value: unknown }
  | { type: 'reply'; id: number; error: string };

/**
 * What a bench may ask a child to do besides serving (seed rows, emit events, report what it saw),
 * by name. Arguments and results cross the IPC channel, so they must survive JSON.
 */
export type ChildCommands = Record<string, (args: any) => Promise<unknown>>;

/**
 * Child side: tell the parent the port, answer its memory questions and its commands, and stop when
 * asked or when the parent goes away (a crashed or killed bench must not leave servers running).
 */
export function reportToParent(port: number, stop: () => Promise<void>, commands: ChildCommands = {}): void {
  if (!process.send) throw new Error('a bench server must be started by bench/lib.ts (fork), not directly');
  const send = (message: FromChild) => process.send?.(message);
  let stopping = false;
  const stopOnce = () => {
    if (stopping) return;
    stopping = true;
    // Exiting through process.exit (not a signal) lets --cpu-prof and --heap-prof write their files.
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`bench server: stopping failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('message', (message: ToChild) => {
    if (message.type === 'rss') send({ type: 'rss', rss: process.memoryUsage().rss });
    else if (message.type === 'stop') stopOnce();
    else if (message.type === 'call') {
      const command = commands[message.name];
      const { id } = message;
      if (!command) send({ type: 'reply', id, error: `this child has no command ${message.name}` });
      else {
        command(message.args).then(
          (value) => send({ type: 'reply', id, value }),
          (error: unknown) => send({ type: 'reply', id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
        );
      }
    }
  });
  process.on('disconnect', stopOnce);
  // Ctrl-C reaches the whole process group; the parent decides when its servers stop, so that a
  // profile still gets written and a PostgreSQL schema is not dropped under a running server.
  process.on('SIGINT', () => undefined);
  send({ type: 'listening', port });
}

// ---------------------------------------------------------------------------------------------
// Parent side: server children and their clean-up.

export interface BenchServer {
  url: string;
  pid: number;
  /** The child's resident set size in bytes, as the child itself reports it. */
  rss(): Promise<number>;
  /** Runs one of the child's commands (see `reportToParent`) and resolves with its result. */
  call<T = unknown>(name: string, args?: unknown): Promise<T>;
  /** Stops the child (gracefully, then by force) and removes what was made for it. Idempotent. */
  stop(): Promise<void>;
}

interface Running {
  child: ChildProcess;
  /** What must still happen if this process exits before `stop()` ran (synchronous only). */
  removeNow(): void;
  stop(): Promise<void>;
}

// Process-wide on purpose: whatever way the bench ends (error, Ctrl-C, process.exit), every child
// it started must be killed, and only this module knows them all.
const running = new Set<Running>();

let cleanUpInstalled = false;
let interrupted = false;

// Installed on the first fork, not at import: the children import this module too, and must keep
// the default signal behaviour.
function installCleanUp(): void {
  if (cleanUpInstalled) return;
  cleanUpInstalled = true;
  process.on('exit', () => {
    for (const entry of running) {
      entry.child.kill('SIGKILL');
      entry.removeNow();
    }
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      interrupted = true;
      void stopAll().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
}

/** Stops every child still running; benches call it in `finally`, `runBench` does it for them. */
export async function stopAll(): Promise<void> {
  await Promise.allSettled([...running].map((entry) => entry.stop()));
}

const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5_000;

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function forkServer(
  script: string,
  options: { env: NodeJS.ProcessEnv; execArgv?: string[]; cleanUp?: () => Promise<void>; removeNow?: () => void; memory?: MemoryRecord['kind'] },
): Promise<BenchServer> {
  installCleanUp();
  // Under BENCH_PERF every server writes its jitdump into the profile directory, its working directory.
  const perfDir = perfDirectory();
  const child = fork(path.join(BENCH_DIR, script), [], {
    env: options.env,
    execArgv: [...(options.execArgv ?? []), ...(perfDir ? PERF_NODE_ARGS : [])],
    ...(perfDir ? { cwd: perfDir } : {}),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });

  let stopped: Promise<void> | undefined;
  let memory: MemoryRecord | undefined;
  const entry: Running = {
    child,
    removeNow: options.removeNow ?? (() => undefined),
    stop() {
      stopped ??= (async () => {
        // The last reading before it goes: a bench stops its baseline long before it ends.
        if (memory) memory.last = procMemory(child.pid!) ?? memory.last;
        if (child.connected) child.send({ type: 'stop' } satisfies ToChild);
        if (!(await waitForExit(child, STOP_TIMEOUT_MS))) {
          child.kill('SIGKILL');
          await waitForExit(child, STOP_TIMEOUT_MS);
        }
        running.delete(entry);
        await options.cleanUp?.();
      })();
      return stopped;
    },
  };
  running.add(entry);

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    const onExit = (code: number | null, signal: string | null) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited before listening (code ${code}, signal ${signal}); its stderr is above`));
    };
    child.once('exit', onExit);
    child.on('message', (message: FromChild) => {
      if (message.type !== 'listening') return;
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve(message.port);
    });
  }).catch(async (error: unknown) => {
    await entry.stop();
    throw error;
  });
  if (options.memory) {
    const atStart = procMemory(child.pid!);
    await sleep(IDLE_SETTLE_MS);
    const idle = procMemory(child.pid!);
    memory = { kind: options.memory, pid: child.pid!, atStart, idle, last: idle };
    memoryRecords.push(memory);
  }

  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    rss: () => childRss(child),
    call: <T>(name: string, args?: unknown) => callChild<T>(child, name, args),
    stop: () => entry.stop(),
  };
}

let nextCallId = 0;

function callChild<T>(child: ChildProcess, name: string, args: unknown): Promise<T> {
  const id = nextCallId++;
  return new Promise<T>((resolve, reject) => {
    // No time limit: a command may legitimately run for most of a bench (emitting at a fixed rate).
    // A child that dies instead of answering must not leave the bench waiting forever, though.
    const onExit = () => {
      child.off('message', onMessage);
      reject(new Error(`the child exited during its command ${name}`));
    };
    const onMessage = (message: FromChild) => {
      if (message.type !== 'reply' || message.id !== id) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      if ('error' in message) reject(new Error(`command ${name} failed in the child: ${message.error}`));
      else resolve(message.value as T);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send({ type: 'call', id, name, args: args ?? null } satisfies ToChild);
  });
}

function childRss(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', onMessage);
      // A child too busy to answer still has a kernel view of its memory.
      const kib = vmRssKib(child.pid!);
      if (kib !== undefined) resolve(kib * 1024);
      else reject(new Error('the server did not report its memory'));
    }, 2_000);
    const onMessage = (message: FromChild) => {
      if (message.type !== 'rss') return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(message.rss);
    };
    child.on('message', onMessage);
    child.send({ type: 'rss' } satisfies ToChild);
  });
}

function vmRssKib(pid: number): number | undefined {
  return procMemory(pid)?.rssKib;
}

// ---------------------------------------------------------------------------------------------
// Memory: every bench prints the service's resident set (at start, before its load, its peak and
// at the end) beside the bare Fastify server's, read from outside like the CPU time.

interface ProcMemory {
  /** VmRSS: resident now. */
  rssKib: number;
  /** VmHWM: the most the process has ever had resident, kept by the kernel, so no sample can miss a peak. */
  peakKib: number;
}

interface MemoryRecord {
  kind: 'service' | 'bare';
  pid: number;
  /** Right after it listens, before the bench has sent it anything: start-up's garbage may still be resident. */
  atStart: ProcMemory | undefined;
  /** `IDLE_SETTLE_MS` later, still before the bench has sent it anything: what the process holds idle. */
  idle: ProcMemory | undefined;
  /**
   * Right before the first measured load against it (`measure` with its pid), after the set-up
   * requests. Its `peakKib` is the set-up's peak (a bench's seeding runs in the service process);
   * the kernel's peak is reset right after it is read, so `last.peakKib` is the load's own.
   */
  beforeLoad?: ProcMemory | undefined;
  /** The latest reading: when it was stopped, or when the bench read it last. */
  last: ProcMemory | undefined;
  /** The kernel's peak could not be reset before the load: `last.peakKib` is the whole run's. */
  peakNotReset?: boolean;
  /**
   * Set-up the bench ran after its first load began (`noteSetUpStarting`): the loads' peak read
   * before each such stretch and the stretches' own, the kernel's peak reset at each boundary, so a
   * second seeding or a twin app that counts queries is not counted as load.
   */
  loadPeakKib?: number;
  laterSetUpPeakKib?: number;
  /** In such a stretch now: the next load, or the end of the run, closes it. */
  inSetUp?: boolean;
}

const memoryRecords: MemoryRecord[] = [];

/**
 * How long a server is left alone after it listens before its idle memory is read. Right after
 * start-up V8 still holds the garbage of loading the code, and frees it within about 1.5 s: six
 * starts of the service read 143–179 MiB at once and 140–149 MiB 1.5 s later.
 */
const IDLE_SETTLE_MS = 2_000;

/** The kernel's view of a process's memory (Linux only; undefined elsewhere or once it has exited). */
function procMemory(pid: number): ProcMemory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
    const peak = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
    return rss === undefined || peak === undefined ? undefined : { rssKib: Number(rss), peakKib: Number(peak) };
  } catch {
    return undefined;
  }
}

/** Resets the kernel's peak to the present RSS; answers false where it cannot. */
function resetPeak(pid: number): boolean {
  try {
    // 5 resets VmHWM to the present RSS (proc(5), /proc/<pid>/clear_refs).
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const higher = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));

/**
 * Reads the service's memory "before the load": `measure` calls it; a bench with a load of its own
 * calls it right before that load. A later load ends the set-up stretch `noteSetUpStarting` began.
 */
export function noteLoadStarting(pid: number): void {
  const record = memoryRecords.find((entry) => entry.pid === pid);
  if (!record) return;
  if (record.beforeLoad) {
    if (!record.inSetUp) return;
    record.laterSetUpPeakKib = higher(record.laterSetUpPeakKib, procMemory(pid)?.peakKib);
    record.inSetUp = false;
    resetPeak(pid);
    return;
  }
  record.beforeLoad = procMemory(pid);
  // Not Linux, or not allowed: the peak stays the whole run's, which the line says.
  if (!resetPeak(pid)) record.peakNotReset = true;
}

/**
 * Marks what the bench does next to the service, until its next load, as set-up rather than load
 * (seeding between two loads, bookkeeping after them). Work the load itself leaves behind (a worker
 * draining the queue it filled) is load, and is not marked.
 */
export function noteSetUpStarting(pid: number): void {
  const record = memoryRecords.find((entry) => entry.pid === pid);
  if (!record?.beforeLoad || record.peakNotReset || record.inSetUp) return;
  record.loadPeakKib = higher(record.loadPeakKib, procMemory(pid)?.peakKib);
  record.inSetUp = true;
  resetPeak(pid);
}

const kibToMib = (kib: number | undefined) => (kib === undefined ? undefined : kib / 1024);
const mibText = (kib: number | undefined) => kibToMib(kib)?.toFixed(1) ?? 'n/a';

/**
 * The memory lines of a bench: the service's RSS at start, idle, before its load, its peak and at
 * the end, and `RESULT <bench> rss_idle_mib=… baseline=…` (idle, `IDLE_SETTLE_MS` after it listens),
 * `RESULT <bench> rss_start_mib=…` (right after it listens) and `RESULT <bench> rss_mib=…
 * baseline=…` (the peak), each against a bare Fastify server in the same run: the bench's own
 * baseline if it ran one, or else one started here, idle, for the comparison.
 */
async function printMemory(bench: string): Promise<void> {
  const services = memoryRecords.filter((entry) => entry.kind === 'service');
  if (services.length === 0) return;
  for (const service of services) service.last = procMemory(service.pid) ?? service.last;
  let bare = memoryRecords.filter((entry) => entry.kind === 'bare');
  let bareNote = 'bare Fastify (the baseline above)';
  if (bare.length === 0) {
    const idle = await startBaseline({ path: '/', body: Buffer.from('{}'), contentType: 'application/json' });
    await idle.stop();
    bare = memoryRecords.filter((entry) => entry.kind === 'bare');
    bareNote = 'bare Fastify (started idle for the comparison: this bench has no bare Fastify baseline)';
  }
  const most = (records: MemoryRecord[], read: (entry: MemoryRecord) => number | undefined) => {
    const values = records.map(read).filter((value): value is number => value !== undefined);
    return values.length === 0 ? undefined : Math.max(...values);
  };
  const serviceStart = most(services, (entry) => entry.atStart?.rssKib);
  const serviceIdle = most(services, (entry) => entry.idle?.rssKib);
  // The loads' peak, the kernel's reset when the first began (noteLoadStarting) and around every
  // stretch of set-up after it (noteSetUpStarting); the set-up's (a bench's seeding runs in the
  // service process) is shown beside it, never folded in.
  const peakOf = (entry: MemoryRecord) => (entry.inSetUp ? entry.loadPeakKib : higher(entry.loadPeakKib, entry.last?.peakKib));
  const servicePeak = most(services, peakOf);
  const setUpPeak = most(services, (entry) =>
    entry.peakNotReset ? undefined : higher(higher(entry.beforeLoad?.peakKib, entry.laterSetUpPeakKib), entry.inSetUp ? entry.last?.peakKib : undefined),
  );
  const peakText = services.some((entry) => entry.beforeLoad && !entry.peakNotReset)
    ? `peak under the load ${mibText(servicePeak)} (set-up's peak ${mibText(setUpPeak)})`
    : `peak ${mibText(servicePeak)}`;
  const bareStart = most(bare, (entry) => entry.atStart?.rssKib);
  const bareIdle = most(bare, (entry) => entry.idle?.rssKib);
  const barePeak = most(bare, peakOf);
  console.log(
    `server RSS, MiB: at start ${mibText(serviceStart)}, idle ${mibText(serviceIdle)}, before the load ${mibText(most(services, (entry) => entry.beforeLoad?.rssKib))}, ` +
      `${peakText}, at the end ${mibText(most(services, (entry) => entry.last?.rssKib))}; ` +
      `${bareNote}: at start ${mibText(bareStart)}, idle ${mibText(bareIdle)}, peak ${mibText(barePeak)}`,
  );
  const result = (metric: string, service: number | undefined, baseline: number | undefined) => {
    if (service === undefined || baseline === undefined) console.log(`RESULT ${bench} ${metric}=n/a baseline=n/a ratio=n/a`);
    else printResult(bench, metric, kibToMib(service)!, kibToMib(baseline)!);
  };
  result('rss_idle_mib', serviceIdle, bareIdle);
  result('rss_start_mib', serviceStart, bareStart);
  result('rss_mib', servicePeak, barePeak);
  if (setUpPeak !== undefined) result('rss_setup_mib', setUpPeak, barePeak);
}

/**
 * The environment of a child: a few neutral variables, never the caller's, so that a DATABASE_URL,
 * REDIS_URL or LOG_LEVEL exported in the shell (or a setting added to the service later) cannot
 * change what is measured.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'TZ', 'LANG', 'LC_ALL']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/**
 * How `npm start` runs the service (scripts/start-command.ts), then any extra node flags, e.g.
 * `BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"`, which come later and so win.
 */
function serverStart(): StartCommand {
  const { env, nodeArgs } = startCommand();
  return { env, nodeArgs: [...nodeArgs, ...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean)] };
}

/**
 * Settings for the service's process from `BENCH_SERVER_ENV` (`NAME=value` words, e.g.
 * `BENCH_SERVER_ENV="METRICS_TOKEN=$(openssl rand -hex 32)"`): the one way a setting reaches the
 * service from the shell, said out loud, to measure what it costs. A bench's own settings still win.
 */
function serverEnvFromShell(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const word of (process.env.BENCH_SERVER_ENV ?? '').split(/\s+/).filter(Boolean)) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(word);
    if (!match) throw new Error(`BENCH_SERVER_ENV: "${word}" is not NAME=value`);
    env[match[1]!] = match[2]!;
  }
  return env;
}

export interface AppServer extends BenchServer {
  store: 'sqlite' | 'postgres';
  /** On PostgreSQL, what a second process needs to serve from this one's schema: `startApp(app.storeEnv)`. */
  storeEnv: Record<string, string>;
  /** On the embedded store, its SQLite file. */
  sqliteFile: string | undefined;
}

/**
 * A bench never measures the rate limiter. It still runs on every request (its cost is part of what
 * a request costs), but with every bucket raised so far that it never refuses: a credential's burst
 * and rate a thousand times the spec's (an organization key refills at 200,000 a second, a connection
 * key at 100,000, more than one process of the service serves in all), and the per-address budget
 * on /auth large enough for any set-up's sign-ups and logins. docs/benchmarks.md, docs/rate-limits.md.
 */
export const BENCH_RATE_LIMITS: Readonly<Record<string, string>> = {
  RATE_LIMIT_CREDENTIAL_MULTIPLIER: '1000',
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '1000000',
};

/**
 * The real service (what `npm start` runs) on a fresh store: an embedded SQLite file in a new
 * temporary DATA_DIR, or, with BENCH_DATABASE_URL set, a new PostgreSQL schema dropped afterwards.
 */
export async function startApp(env: Record<string, string> = {}): Promise<AppServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'msgsvc-bench-'));
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  const schema = databaseUrl ? `bench_${randomBytes(6).toString('hex')}` : undefined;
  const storeEnv: Record<string, string> =
    databaseUrl && schema ? { DATABASE_URL: databaseUrl, BENCH_SCHEMA: schema, MASTER_KEY: randomBytes(32).toString('hex') } : {};
  const start = serverStart();
  const server = await forkServer('serve-app.ts', {
    env: {
      ...cleanEnv(),
      ...start.env,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      HOST: '127.0.0.1',
      PORT: '0',
      PUBLIC_BASE_URL: 'http://localhost:3000',
      ...BENCH_RATE_LIMITS,
      ...storeEnv,
      ...serverEnvFromShell(),
      ...env,
    },
    execArgv: start.nodeArgs,
    memory: 'service',
    removeNow: () => rmSync(dataDir, { recursive: true, force: true }),
    async cleanUp() {
      rmSync(dataDir, { recursive: true, force: true });
      if (databaseUrl && schema) await dropSchema(databaseUrl, schema);
    },
  });
  return { ...server, store: databaseUrl ? 'postgres' : 'sqlite', storeEnv, sqliteFile: databaseUrl ? undefined : sqliteFileIn(dataDir) };
}

// The parent drops the schema, not the child, so that a child that crashed still leaves nothing behind.
async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  const { openStore } = await import('../src/db/connect.ts');
  const { sql } = await import('kysely');
  const store = openStore({ databaseUrl, poolSize: 1 });
  try {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
  } finally {
    await store.close();
  }
}

/**
 * A helper child of a bench's own (a webhook receiver, say): any script in bench/ that calls
 * `reportToParent`, with the same neutral environment as the servers plus `env`.
 */
export function startHelper(script: string, env: Record<string, string> = {}): Promise<BenchServer> {
  return forkServer(script, { env: { ...cleanEnv(), ...env } });
}

export interface BaselineResponse {
  method?: string;
  /** The path the baseline answers on; use the real route's path so URL parsing costs the same. */
  path: string;
  body: Buffer;
  contentType: string;
  status?: number;
}

/**
 * A bare Fastify server (no hooks, no schemas, no store) answering one route with fixed bytes: the
 * ceiling that Node, HTTP and Fastify themselves set on this machine for a response of that size.
 */
export async function startBaseline(response: BaselineResponse): Promise<BenchServer> {
  const dir = mkdtempSync(path.join(tmpdir(), 'msgsvc-baseline-'));
  // A file, not an environment variable: a large response body would exceed the kernel's limit.
  const bodyFile = path.join(dir, 'body');
  writeFileSync(bodyFile, response.body);
  return forkServer('serve-baseline.ts', {
    env: {
      ...cleanEnv(),
      BENCH_BASELINE_METHOD: response.method ?? 'GET',
      BENCH_BASELINE_PATH: response.path,
      BENCH_BASELINE_STATUS: String(response.status ?? 200),
      BENCH_BASELINE_CONTENT_TYPE: response.contentType,
      BENCH_BASELINE_BODY_FILE: bodyFile,
    },
    memory: 'bare',
    removeNow: () => rmSync(dir, { recursive: true, force: true }),
    async cleanUp() {
      rmSync(dir, { recursive: true, force: true });
    },
  });
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers for setting a bench up through the real API.

export async function requestJson<T = any>(url: string, options: { method?: string; token?: string; body?: unknown; expectStatus?: number } = {}): Promise<T> {
  const method = options.method ?? (options.body === undefined ? 'GET' : 'POST');
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(url, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await response.text();
  const failed = options.expectStatus === undefined ? !response.ok : response.status !== options.expectStatus;
  if (failed) throw new Error(`${method} ${url}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

/**
 * Puts the bench's organization on a paid plan through the local checkout page, as an owner would:
 * the free plan's hard limit (1,000 messages sent a month, docs/usage.md) would refuse a bench's
 * sends part way through.
 */
export async function choosePlan(appUrl: string, token: string, plan: 'pro' | 'scale'): Promise<void> {
  const session = await requestJson<{ url: string }>(`${appUrl}/v1/billing/checkout`, { token, body: { plan } });
  const response = await fetch(`${appUrl}${new URL(session.url).pathname}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ plan }).toString(),
  });
  if (!response.ok) throw new Error(`the local checkout refused the plan: ${response.status} ${await response.text()}`);
}

// ---------------------------------------------------------------------------------------------
// Load.

/** The part of autocannon's programmatic API used here (the package ships no types). */
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number; max: number };
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats: Record<string, { count: number }>;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  idReplacement?: boolean;
  setupClient?: (client: AutocannonClient) => void;
}) => Promise<AutocannonResult>;
interface AutocannonClient {
  setHeaders(headers: Record<string, string>): void;
  setBody(body: string): void;
}

const loadAutocannon = (() => {
  let cached: Autocannon | undefined;
  // autocannon is CommonJS without types; requiring it lazily keeps it out of the server children.
  return () => (cached ??= createRequire(import.meta.url)('autocannon') as Autocannon);
})();

export interface LoadOptions {
  url: string;
  connections?: number;
  seconds?: number;
  /** Run first and thrown away: JIT compilation, connection set-up, caches. */
  warmupSeconds?: number;
  method?: string;
  headers?: Record<string, string>;
  /**
   * Headers per connection, handed out in turn (connection i gets entry i mod length), on top of
   * `headers`. For load from several credentials, as many clients would send it.
   */
  connectionHeaders?: Record<string, string>[];
  /** Bodies per connection, handed out like `connectionHeaders`, instead of `body`. */
  connectionBodies?: string[];
  body?: string;
  /** Replace `[<id>]` in every request (headers and body) with a fresh unique id: an Idempotency-Key per request. */
  idReplacement?: boolean;
  /** The server's pid, to report the CPU time it spent per request during the measurement. */
  pid?: number;
}

export interface LoadFigures {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  requests: number;
  /**
   * Server CPU time (user + system) per completed request, in microseconds. It moves less than
   * req/s with what else the machine runs (req/s drops whenever another process takes a core), so
   * it is the better figure for comparing two versions of the service.
   */
  cpuUsPerRequest: number | undefined;
}

// ---------------------------------------------------------------------------------------------
// Server CPU time: the figure every bench reports per request, steadier than req/s on a shared
// machine (req/s falls whenever another process takes a core; the CPU a request costs hardly moves).

// /proc reports CPU time in USER_HZ ticks, which Linux fixes at 100 whatever the kernel's own rate.
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU seconds (user + system, all threads) a process has used so far: this process's own from
 * process.cpuUsage() (microseconds), a child's from /proc (10 ms ticks; Linux only, undefined
 * elsewhere). Read from outside, a child answers even while too busy to answer over IPC.
 */
export function cpuSeconds(pid: number): number | undefined {
  if (pid === process.pid) {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1e6;
  }
  try {
    // The command name (field 2) may hold spaces, so count fields from after its closing parenthesis.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** Microseconds of CPU per request (or delivery, or webhook) from two `cpuSeconds` readings; undefined if either is missing or nothing was done. */
export function cpuUsPer(count: number, before: number | undefined, after: number | undefined): number | undefined {
  return before === undefined || after === undefined || count === 0 ? undefined : ((after - before) * 1e6) / count;
}

/**
 * Starts counting the CPU time of `pids` (summed): start it right before a measured phase and read
 * it right after, so that set-up, warm-up and the other side's run stay out of the figure.
 */
export function startCpuClock(...pids: number[]): { seconds(): number | undefined; usPer(count: number): number | undefined } {
  const total = () => {
    let sum = 0;
    for (const pid of pids) {
      const used = cpuSeconds(pid);
      if (used === undefined) return undefined;
      sum += used;
    }
    return sum;
  };
  const before = total();
  return {
    seconds: () => {
      const now = total();
      return before === undefined || now === undefined ? undefined : now - before;
    },
    usPer: (count) => cpuUsPer(count, before, total()),
  };
}

/**
 * Samples a process's CPU time every 10 ms (the resolution /proc has anyway) until stopped, and then
 * answers what it had used by a given epoch millisecond: the last sample taken at or before it. For
 * a phase whose end is known only afterwards (the time stamp of the last row written), and a child
 * too busy to be asked while it runs.
 */
export function sampleCpu(pid: number): { stop(): (epochMs: number) => number | undefined } {
  const samples: { at: number; cpu: number }[] = [];
  const take = () => {
    const cpu = cpuSeconds(pid);
    if (cpu !== undefined) samples.push({ at: Date.now(), cpu });
  };
  take();
  const timer = setInterval(take, 10);
  return {
    stop() {
      clearInterval(timer);
      take();
      return (epochMs) => samples.findLast((sample) => sample.at <= epochMs)?.cpu;
    },
  };
}

/**
 * Warms up, then measures. Any non-2xx answer or socket error fails the bench: a server that
 * answers 401 quickly would otherwise look fast.
 */
export async function measure(options: LoadOptions): Promise<LoadFigures> {
  const autocannon = loadAutocannon();
  const base = {
    url: options.url,
    connections: options.connections ?? 50,
    ...(options.method ? { method: options.method } : {}),
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.idReplacement ? { idReplacement: true } : {}),
  };
  const headers = options.connectionHeaders;
  const bodies = options.connectionBodies;
  let nextConnection = 0;
  const setupClient =
    headers?.length || bodies?.length
      ? (client: AutocannonClient) => {
          const index = nextConnection++;
          if (headers?.length) client.setHeaders({ ...options.headers, ...headers[index % headers.length] });
          if (bodies?.length) client.setBody(bodies[index % bodies.length]!);
        }
      : undefined;
  const run = (duration: number) => autocannon({ ...base, duration, ...(setupClient ? { setupClient } : {}) });
  const check = (result: AutocannonResult, phase: string) => {
    if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
      throw new Error(
        `${phase} against ${options.url}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} time-outs ` +
          `(status codes: ${JSON.stringify(result.statusCodeStats)})`,
      );
    }
  };
  if (options.pid !== undefined) noteLoadStarting(options.pid);
  if (options.warmupSeconds) check(await run(options.warmupSeconds), 'warm-up');
  const cpu = options.pid === undefined ? undefined : startCpuClock(options.pid);
  const perfDir = perfDirectory();
  const perf =
    perfDir && options.pid !== undefined
      ? startPerf(perfDir, options.pid, `pid${options.pid}${new URL(options.url).pathname.replace(/\W+/g, '-')}`)
      : undefined;
  const result = await run(options.seconds ?? 10);
  const cpuUsPerRequest = cpu?.usPer(result.requests.total);
  await perf?.stop();
  check(result, 'measurement');
  return {
    reqPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    meanMs: result.latency.average,
    requests: result.requests.total,
    cpuUsPerRequest,
  };
}

// ---------------------------------------------------------------------------------------------
// Output.

export function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}

function ratio(value: number, baseline: number): string {
  return baseline === 0 ? 'inf' : (value / baseline).toFixed(2);
}

/** Prints a left-aligned first column and right-aligned figures. */
export function printTable(header: string[], rows: string[][]): void {
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => (row[column] ?? '').length)));
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const row of rows) console.log(line(row));
}

/** The machine-readable line every bench ends with; ratio is value / baseline. */
/** One row of a load table: the figures of the service or of its baseline, beside their name. */
export function loadRow(name: string, figures: LoadFigures): string[] {
  return [
    name,
    figures.reqPerSec.toFixed(0),
    figures.p50Ms.toFixed(0),
    figures.p99Ms.toFixed(0),
    figures.meanMs.toFixed(2),
    figures.cpuUsPerRequest?.toFixed(0) ?? 'n/a',
  ];
}

export function printResult(bench: string, metric: string, value: number, baseline: number, decimals = 1): void {
  console.log(`RESULT ${bench} ${metric}=${value.toFixed(decimals)} baseline=${baseline.toFixed(decimals)} ratio=${ratio(value, baseline)}`);
}

/**
 * The RESULT line of the server's CPU µs per request (metric `server_cpu_us_per_req` unless named),
 * which every bench prints for its service and its baseline; `n/a` where the CPU time could not be
 * read (no /proc).
 */
export function printCpuResult(bench: string, service: number | undefined, baseline: number | undefined, metric = 'server_cpu_us_per_req'): void {
  if (service === undefined || baseline === undefined) console.log(`RESULT ${bench} ${metric}=n/a baseline=n/a ratio=n/a`);
  else printResult(bench, metric, service, baseline);
}

/** Runs a bench body, always stopping its children; a failure is printed and makes the exit code 1. */
export async function runBench(name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
    await printMemory(name);
  } catch (error) {
    process.exitCode = 1;
    // Stopping the servers mid-run on Ctrl-C fails the load run; that is not news worth a stack trace.
    if (!interrupted) console.error(`bench ${name} failed:`, error);
  } finally {
    await stopAll();
  }
}

/** The value at `fraction` (0.5, 0.99) of values sorted ascending; NaN for none. */
export function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
}

/** The middle of values sorted ascending; of an even count, the lower of the two middle ones. */
export function middleOf<T>(sorted: readonly T[]): T {
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/** A bench size from the environment: unset or empty is undefined, anything but a whole number ≥ 1 stops the bench. */
export function positiveIntegerFromEnv(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === '') return undefined;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 1) throw new Error(`${name} must be a whole number of at least 1 (got "${value}")`);
  return parsed;
}
