/**
 * How `npm start` runs the service, read from package.json's `start` script, the one place it is
 * written: the environment it sets (`MALLOC_ARENA_MAX`) and its node flags (`--max-semi-space-size`,
 * `--heap-growing-percent`, docs/benchmarks.md#memory; `--import` of `src/strip-types-cache.js`).
 * The benches start the service child with them, and a test checks that the Node in use accepts them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = path.join(import.meta.dirname, '..');

export interface StartCommand {
  env: Record<string, string>;
  nodeArgs: string[];
}

export function startCommand(): StartCommand {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = manifest.scripts.start.split(/\s+/);
  const env: Record<string, string> = {};
  while (words[0] !== undefined && /^[A-Z_][A-Z0-9_]*=/.test(words[0])) {
    const [name, ...value] = words.shift()!.split('=');
    env[name!] = value.join('=');
  }
  if (words[0] !== 'node' || words.at(-1) !== 'src/main.ts')
    throw new Error(`package.json's start script is not "[NAME=value ...] node [flags] src/main.ts": ${manifest.scripts.start}`);
  // `npm start` runs in the project's root; a bench's service may run elsewhere (under BENCH_PERF,
  // in the profile's directory), so a module the flags import by a relative path is made absolute.
  const nodeArgs = words
    .slice(1, -1)
    .map((flag) => (flag.startsWith('--import=./') ? `--import=${pathToFileURL(path.join(ROOT, flag.slice('--import='.length))).href}` : flag));
  return { env, nodeArgs };
}
