/**
 * How `npm start` runs the service, read from package.json's `start` script, the one place it is
 * written: the environment it sets (`MALLOC_ARENA_MAX`) and its node flags (`--max-semi-space-size`,
 * `--heap-growing-percent`; docs/benchmarks.md#memory). The benches start the service child with
 * them, and a test checks that the Node in use accepts them.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface StartCommand {
  env: Record<string, string>;
  nodeArgs: string[];
}

export function startCommand(): StartCommand {
  const manifest = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = manifest.scripts.start.split(/\s+/);
  const env: Record<string, string> = {};
  while (words[0] !== undefined && /^[A-Z_][A-Z0-9_]*=/.test(words[0])) {
    const [name, ...value] = words.shift()!.split('=');
    env[name!] = value.join('=');
  }
  if (words[0] !== 'node' || words.at(-1) !== 'src/main.ts')
    throw new Error(`package.json's start script is not "[NAME=value ...] node [flags] src/main.ts": ${manifest.scripts.start}`);
  return { env, nodeArgs: words.slice(1, -1) };
}
