/**
 * The README's "Five minutes with curl", run exactly as a newcomer pastes it into one terminal: every
 * `sh` block of the section but the one that starts the server (the caller starts it). Used by the
 * test that keeps the README true (test/readme-walkthrough.test.ts) and by `npm run newcomer`, which
 * times a whole first run from `git clone`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

export function walkthroughScript(readme: string): string {
  const start = readme.indexOf('## Five minutes with curl');
  assert.ok(start >= 0, 'the README has its walkthrough');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  return blocks.filter((block) => !block.includes('npm start')).join('\n');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface Walkthrough {
  /** Everything the steps and the receiver they start printed, each answer on a line of its own. */
  output(): string;
  /** Whether the receiver has printed an event of this type. */
  delivered(type: string): boolean;
  /** Resolves with the exit code of the steps (the receiver they started keeps running). */
  finished: Promise<number | null>;
  /** Stops the receiver the steps left running. */
  stop(): void;
}

/**
 * Runs the steps against the service at `serviceUrl`, the receiver on a free port. Standard error
 * goes to `stderrFile`, as a terminal would be something `tee /dev/stderr` can open (Node's pipes
 * are sockets, which it cannot).
 */
export async function runWalkthrough(readme: string, serviceUrl: string, stderrFile: string): Promise<Walkthrough> {
  const receiverPort = String(await freePort());
  const script = walkthroughScript(readme)
    .replaceAll('http://127.0.0.1:3000', serviceUrl)
    .replaceAll('listen(4000)', `listen(${receiverPort})`)
    .replaceAll('127.0.0.1:4000', `127.0.0.1:${receiverPort}`);
  const errors = openSync(stderrFile, 'w');
  // Its own process group, so that the receiver it leaves running in the background goes with it.
  const shell = spawn('bash', ['-euo', 'pipefail', '-c', script], { detached: true, stdio: ['ignore', 'pipe', errors] });
  closeSync(errors);
  let stdout = '';
  shell.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  // curl prints no newline after an answer: an answer shares its line with what comes next.
  const output = () => stdout.replaceAll('}{"', '}\n{"').replaceAll('}webhook: ', '}\nwebhook: ');
  return {
    output,
    delivered: (type) =>
      output()
        .split('\n')
        .some((line) => line.startsWith('webhook: ') && line.includes(`"type":"${type}"`)),
    finished: new Promise((resolve) => shell.on('exit', resolve)),
    stop: () => {
      try {
        process.kill(-shell.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    },
  };
}

export function readmeAt(root: string): string {
  return readFileSync(path.join(root, 'README.md'), 'utf8');
}
