/**
 * `npm run newcomer`: a newcomer's first run, timed. Clones this repository into a temporary folder,
 * installs it (`npm ci`), starts it (`npm start`, with the variable the README's first step sets) and
 * pastes the README's walkthrough into a shell, until the receiver the walkthrough starts prints the
 * first received message. Prints each phase and `RESULT newcomer seconds_to_first_message=…`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, readmeAt, runWalkthrough } from './readme-walkthrough.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(path.join(tmpdir(), 'newcomer-'));
const checkout = path.join(work, 'messaging-service');
const started = performance.now();
let last = started;
/** Prints how long the phase that just ended took. */
const phase = (name: string) => {
  const now = performance.now();
  console.log(`${name}: ${((now - last) / 1000).toFixed(1)} s`);
  last = now;
};

async function waitUntil(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

let server: ReturnType<typeof spawn> | undefined;
let stopWalkthrough = () => undefined as void;
try {
  execFileSync('git', ['clone', '--quiet', root, checkout], { stdio: 'inherit' });
  phase('git clone');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: checkout, stdio: 'inherit' });
  phase('npm ci');

  const port = await freePort();
  server = spawn('npm', ['start'], {
    cwd: checkout,
    env: { ...process.env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', PORT: String(port), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let log = '';
  server.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  server.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  await waitUntil('the server to listen', () => log.includes('Server listening at'), 60_000);
  phase('npm start');

  const walkthrough = await runWalkthrough(readmeAt(checkout), `http://127.0.0.1:${port}`, path.join(work, 'walkthrough.stderr'));
  stopWalkthrough = walkthrough.stop;
  await waitUntil('the first received message at the receiver', () => walkthrough.delivered('message.received'), 60_000);
  phase('the walkthrough, to the first received message');

  const total = (performance.now() - started) / 1000;
  console.log(`RESULT newcomer seconds_to_first_message=${total.toFixed(1)}`);
} finally {
  stopWalkthrough();
  if (server?.pid) process.kill(-server.pid, 'SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
