/** The service as a process: start-up configuration errors and graceful shutdown on SIGTERM. */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { after, describe, it, type TestContext } from 'node:test';
import { waitFor } from './wait.ts';

const MAIN = path.resolve(import.meta.dirname, '../src/main.ts');
const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The service as a child process; killed when the test ends if it still runs. */
function startMain(t: TestContext, env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'msgsvc-main-'));
  dirs.push(dataDir);
  // The process gets only what it needs, so the developer's own environment cannot leak into the test.
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

async function listeningUrl(output: () => string, child: ChildProcess): Promise<string> {
  const match = await waitFor(
    () => {
      const found = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output());
      if (!found && child.exitCode !== null) throw new Error(`the service exited: ${output()}`);
      return found;
    },
    { timeoutMs: 10_000, intervalMs: 20, message: () => `the service to start: ${output()}` },
  );
  return match[1]!;
}

describe('the service process', () => {
  for (const [variable, value] of [
    ['PORT', 'eighty'],
    ['DATABASE_URL', 'mysql://localhost/db'],
    ['PROVIDER_MODE', 'production'],
    ['WEBHOOK_ALLOW_PRIVATE_NETWORKS', 'maybe'],
    ['MASTER_KEY', 'too-short'],
  ] as const) {
    it(`a bad ${variable} stops start-up with one line naming it`, async (t) => {
      const { child, output } = startMain(t, { [variable]: value });
      const [code] = (await once(child, 'exit')) as [number];
      assert.equal(code, 1);
      const lines = output().trim().split('\n');
      assert.equal(lines.length, 1, output());
      assert.match(lines[0]!, new RegExp(`^configuration error: ${variable}: `));
    });
  }

  it('starts on the embedded defaults, then on SIGTERM finishes in-flight requests and exits cleanly', async (t) => {
    const { child, output } = startMain(t, {});
    const url = await listeningUrl(output, child);
    assert.match(output(), /embedded store/);
    assert.equal((await fetch(`${url}/readyz`)).status, 200);

    // Sign-up hashes a password (tens of milliseconds), so it is still running when the signal lands.
    const inFlight = fetch(`${url}/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ email: 'late@example.com', password: 'a long enough password', organization_name: 'Late' }),
    });
    // Signal only once the server has the request, so it is in flight rather than refused as late.
    await waitFor(() => output().includes('"url":"/auth/signup"'), { message: 'the server to log the sign-up request' });
    child.kill('SIGTERM');
    const response = await inFlight;
    assert.equal(response.status, 201);
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0, output());
    assert.match(output(), /shutting down/);
    await assert.rejects(fetch(`${url}/healthz`));
  });
});
