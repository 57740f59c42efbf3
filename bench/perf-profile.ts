/**
 * `BENCH_PERF=<dir>`: a profile of a server's measured run taken by Linux `perf`, not by V8.
 *
 * Why not `--cpu-prof`: V8's sampler is a thread that signals the main thread every interval, and on
 * these virtual machines its samples pile up on system calls. Identity's V8 profile put two thirds of
 * the server's samples in the socket write (`writeUtf8String`) and the bare route's put 89 % in its
 * `writev`, where `perf` counts 23 % and 27 % of the CPU time: the V8 profile is fine for comparing
 * JavaScript functions with each other and misleading for anything that ends in the kernel.
 *
 * How: each server starts with `--perf-prof`, so V8 writes a jitdump of every piece of code it makes
 * (with the time it was made: an address reused after a GC still resolves to the right function,
 * which `--perf-basic-prof`'s map file cannot do), into the profile directory. `perf record` follows
 * the server's process, every thread of it, for the measured run only (never the warm-up), and
 * `perf inject --jit` joins the two. The summary charges each sample to the code that ran: the
 * system call for kernel time, else the innermost JavaScript frame (native code a JavaScript
 * function called is its cost), else the native part (HTTP parser, GC, libuv). The data and its
 * samples as text stay in the directory.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const SAMPLE_HZ = 999;
const TOP_FILES = 25;
const TOP_FUNCTIONS = 30;

/** The directory profiles go to, or undefined when `BENCH_PERF` is unset. */
export function perfDirectory(): string | undefined {
  const dir = process.env.BENCH_PERF;
  if (!dir) return undefined;
  const absolute = path.resolve(dir);
  // perf reads any object whose path starts so as a perf-<pid>.map file, so no JavaScript would be named.
  if (absolute.startsWith('/tmp/perf-')) throw new Error(`BENCH_PERF=${absolute}: perf takes paths under /tmp/perf-* for map files; choose another directory`);
  mkdirSync(absolute, { recursive: true });
  return absolute;
}

/** Node's flag for the jitdump `perf inject` reads: written to the process's working directory. */
export const PERF_NODE_ARGS = ['--perf-prof'];

let recorded = 0;

export interface PerfRecording {
  /** Stops recording, joins the jitdump, prints the summary and answers where the data is. */
  stop(): Promise<string>;
}

/** Starts `perf record` on a process and every thread of it. Fails when `perf` is missing. */
export function startPerf(dir: string, pid: number, label: string): PerfRecording {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('BENCH_PERF is set but `perf` is not installed (Debian: apt-get install linux-perf)');
  }
  const raw = path.join(dir, `${++recorded}-${label}.raw.data`);
  const data = path.join(dir, `${recorded}-${label}.data`);
  // -k 1: the monotonic clock the jitdump's time stamps use, without which inject cannot match them.
  const perf = spawn('perf', ['record', '-k', '1', '-F', String(SAMPLE_HZ), '-g', '-p', String(pid), '-o', raw], { stdio: ['ignore', 'ignore', 'pipe'] });
  let errors = '';
  perf.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  return {
    async stop() {
      await interrupt(perf);
      if (perf.exitCode !== 0 && perf.exitCode !== null) throw new Error(`perf record exited with ${perf.exitCode}: ${errors}`);
      // Not synchronous: the two take seconds on a large recording, and a bench process blocked that
      // long keeps undici from closing its idle keep-alive connections before a receiver does, so the
      // next raw POST on one failed ("other side closed").
      await execFileAsync('perf', ['inject', '--jit', '-i', raw, '-o', data], { cwd: dir });
      rmSync(raw, { force: true });
      const { stdout: script } = await execFileAsync('perf', ['script', '-i', data, '-F', 'ip,sym'], { cwd: dir, maxBuffer: 1 << 30, encoding: 'buffer' });
      // The samples with their names resolved now: a later recording of the same server rewrites the
      // code files inject made, after which `perf report` on this data no longer names JavaScript.
      const samples = data.replace(/\.data$/, '.samples.txt');
      writeFileSync(samples, script);
      printSummary(label, summarize(script.toString()));
      console.log(`perf data: ${data}; its samples, named: ${samples}`);
      return data;
    },
  };
}

function interrupt(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGINT');
  });
}

interface Frame {
  kernel: boolean;
  symbol: string;
}

export interface PerfSummary {
  samples: number;
  /** Samples per part: "kernel: write", "native: HTTP parser", or a source file. */
  parts: Map<string, number>;
  /** Samples per innermost JavaScript function, kernel call or native part. */
  functions: Map<string, number>;
}

/** Charges each sample of `perf script -F ip,sym` output to the code that ran (see the file's comment). */
export function summarize(script: string): PerfSummary {
  const summary: PerfSummary = { samples: 0, parts: new Map(), functions: new Map() };
  for (const block of script.split(/\n\s*\n/)) {
    const frames = parseFrames(block);
    if (frames.length === 0) continue;
    summary.samples++;
    const { part, fn } = chargeOf(frames);
    summary.parts.set(part, (summary.parts.get(part) ?? 0) + 1);
    summary.functions.set(fn, (summary.functions.get(fn) ?? 0) + 1);
  }
  return summary;
}

function parseFrames(block: string): Frame[] {
  const frames: Frame[] = [];
  for (const line of block.split('\n')) {
    const trimmed = line.trim();
    const space = trimmed.indexOf(' ');
    if (space <= 0) continue;
    frames.push({ kernel: trimmed.startsWith('ffffffff'), symbol: trimmed.slice(space + 1) });
  }
  return frames;
}

function chargeOf(frames: Frame[]): { part: string; fn: string } {
  if (frames[0]!.kernel) {
    const caller = frames.find((frame) => !frame.kernel)?.symbol ?? 'kernel thread';
    const part = `kernel: ${caller.replace(/^__GI___(libc_)?/, '').replace(/@.*/, '')}`;
    return { part, fn: part };
  }
  const jsIndex = frames.findIndex((frame) => frame.symbol.startsWith('JS:'));
  // Libraries worth seeing on their own rather than inside the JavaScript that called them.
  const library = frames.slice(0, jsIndex < 0 ? frames.length : jsIndex).find((frame) => NATIVE_LIBRARIES.some(([pattern]) => pattern.test(frame.symbol)));
  if (library) {
    const part = `native: ${NATIVE_LIBRARIES.find(([pattern]) => pattern.test(library.symbol))![1]}`;
    return { part, fn: part };
  }
  const js = frames[jsIndex];
  if (!js) {
    const part = `native: ${nativePart(frames)}`;
    return { part, fn: part };
  }
  // "JS:*'name file:///…/src/x.ts:12:3": the tier mark, then the name and where it is.
  const fn = js.symbol
    .replace(/^JS:[*+~^]?'?/, '')
    .replace(/file:\/\//, '')
    .replace(`${process.cwd()}/`, '')
    .replace(/^ /, '(anonymous) ');
  const where = /\s(\S+):\d+:\d+$/.exec(fn)?.[1];
  // Generated code (fast-json-stringify's serializers, Ajv's validators) has no file.
  const part = where ? where.replace(/^node_modules\/((?:@[^/]+\/)?[^/]+)\/.*/, '$1') : 'generated (serializers, validators)';
  return { part, fn };
}

const NATIVE_LIBRARIES: [RegExp, string][] = [
  [/^node::sqlite::|^sqlite3/, 'SQLite (node:sqlite)'],
  [/JsonParser|JsonStringifier/, 'JSON.parse and JSON.stringify'],
];

function nativePart(frames: Frame[]): string {
  const symbols = frames.map((frame) => frame.symbol);
  if (symbols.some((symbol) => symbol.includes('http_parser') || symbol.includes('llhttp'))) return 'HTTP parser';
  if (/GC|Scaveng|Marking|Sweep|Heap::|Evacuat|Compactor/.test(symbols[0]!)) return 'GC';
  if (symbols.some((symbol) => /Compiler|compiler::|Maglev|Turbofan/.test(symbol))) return 'JIT compiler';
  if (symbols.some((symbol) => symbol.startsWith('uv_') || symbol.startsWith('uv__'))) return 'libuv';
  return symbols[0]!.slice(0, 60);
}

function printSummary(label: string, summary: PerfSummary): void {
  const share = (count: number) => `${((100 * count) / summary.samples).toFixed(1).padStart(5)} %`;
  const top = (counts: Map<string, number>, limit: number) => [...counts].sort((a, b) => b[1] - a[1]).slice(0, limit);
  console.log(`\nperf profile of ${label}: ${summary.samples} samples at ${SAMPLE_HZ} Hz, every thread of the server`);
  console.log('by part (kernel time by the system call that entered it; the rest by the innermost JavaScript file):');
  for (const [part, count] of top(summary.parts, TOP_FILES)) console.log(`  ${share(count)}  ${part}`);
  console.log('by function:');
  for (const [fn, count] of top(summary.functions, TOP_FUNCTIONS)) console.log(`  ${share(count)}  ${fn.slice(0, 120)}`);
  console.log('');
}
