/** The service as a process: start-up configuration errors and graceful shutdown on SIGTERM. */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { once } from 'node:events';
import { after, describe, it, type TestContext } from 'node:test';
import { spawnSync } from 'node:child_process';
import { startCommand } from '../scripts/start-command.ts';
import { listeningUrl, spawnService, type ServiceProcess } from './service-process.ts';
import { waitFor } from './wait.ts';

const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The service on a fresh data directory of its own; killed when the test ends if it still runs. */
function startMain(t: TestContext, env: Record<string, string>): ServiceProcess {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'msgsvc-main-'));
  dirs.push(dataDir);
  return spawnService(t, { DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', ...env });
}

/** Makes the process say when it loads the S3 client: a resolve hook, given through NODE_OPTIONS. */
const REPORT_S3_CLIENT = `--import=data:text/javascript,${encodeURIComponent(`
  import { registerHooks } from 'node:module';
  registerHooks({
    resolve(specifier, context, next) {
      if (specifier === '@aws-sdk/client-s3') process.stderr.write('loading @aws-sdk/client-s3\\n');
      return next(specifier, context);
    },
  });
`)}`;

describe('the service process', () => {
  it('npm start’s node flags are ones this Node accepts (V8 flags pass through Node, and an unknown one stops it)', () => {
    const { env, nodeArgs } = startCommand();
    assert.ok(nodeArgs.includes('--heap-growing-percent=30') && nodeArgs.includes('--max-semi-space-size=8'), nodeArgs.join(' '));
    const run = spawnSync(process.execPath, [...nodeArgs, '-e', 'process.stdout.write("ran")'], { env: { ...process.env, ...env }, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, 'ran');
    const bogus = spawnSync(process.execPath, ['--heap-growing-percent-bogus=1', '-e', '0'], { encoding: 'utf8' });
    assert.notEqual(bogus.status, 0, 'an unknown flag must stop node, or the check above proves nothing');
  });

  it('npm start keeps the app’s stripped TypeScript, and a second start loads it without starting the stripper', () => {
    const { env, nodeArgs } = startCommand();
    const cacheDir = mkdtempSync(path.join(tmpdir(), 'msgsvc-strip-types-'));
    dirs.push(cacheDir);
    // The whole app's module graph, as main.ts loads it, from outside the project's root.
    const load = `await import(${JSON.stringify(pathToFileURL(path.resolve(import.meta.dirname, '../src/app.ts')).href)});
      process.stdout.write(String(process.moduleLoadList.some((name) => name.includes('amaro'))));`;
    // Without the test suite's compile cache, which would spare the stripper too.
    const { NODE_COMPILE_CACHE: _suiteCache, ...outside } = process.env;
    const start = () =>
      spawnSync(process.execPath, [...nodeArgs, '--input-type=module', '-e', load], {
        cwd: tmpdir(),
        env: { ...outside, ...env, STRIP_TYPES_CACHE_DIR: cacheDir },
        encoding: 'utf8',
      });
    const first = start();
    assert.equal(first.status, 0, first.stderr);
    assert.equal(first.stdout, 'true', 'the first start strips the files');
    assert.ok(readdirSync(cacheDir).length > 100, 'and keeps each of them');
    const second = start();
    assert.equal(second.status, 0, second.stderr);
    assert.equal(second.stdout, 'false', 'the second start reads what the first kept');
  });

  for (const [variable, value] of [
    ['PORT', 'eighty'],
    ['DATABASE_URL', 'mysql://localhost/db'],
    ['PROVIDER_MODE', 'production'],
    ['WEBHOOK_ALLOW_PRIVATE_NETWORKS', 'maybe'],
    ['MASTER_KEY', 'too-short'],
    ['MEDIA_STORAGE_URL', 's3://media-files'],
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

  it('on the embedded defaults, keeps media under DATA_DIR and never loads the S3 client', async (t) => {
    const service = startMain(t, { NODE_OPTIONS: REPORT_S3_CLIENT });
    await listeningUrl(service);
    assert.match(service.output(), /"media_storage":"[^"]+\/media"/);
    assert.doesNotMatch(service.output(), /loading @aws-sdk\/client-s3/);
  });

  it('with MEDIA_STORAGE_URL naming a bucket, loads the S3 client and logs the bucket, never the credentials', async (t) => {
    const service = startMain(t, {
      NODE_OPTIONS: REPORT_S3_CLIENT,
      // Nothing listens there: the process reaches the bucket only when it stores or reads a file.
      MEDIA_STORAGE_URL: 's3://AKIDPROCESSTEST:s3cr3t-process-test@media-files/prod?endpoint=http://127.0.0.1:9',
    });
    await listeningUrl(service);
    const output = service.output();
    assert.match(output, /loading @aws-sdk\/client-s3/);
    assert.match(output, /"media_storage":"s3:\/\/media-files\/prod\/ at http:\/\/127.0.0.1:9"/);
    assert.doesNotMatch(output, /s3cr3t|AKIDPROCESSTEST/);
  });

  it('starts on the embedded defaults, then on SIGTERM finishes in-flight requests and exits cleanly', async (t) => {
    const service = startMain(t, {});
    const { child, output } = service;
    const url = await listeningUrl(service);
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

  it('ROLE=worker with METRICS_TOKEN listens for metrics scrapes and nothing else', async (t) => {
    const token = 'f'.repeat(64);
    // A worker in sandbox mode names the sandbox an api process serves; none runs here, nor is one called.
    const service = startMain(t, { ROLE: 'worker', METRICS_TOKEN: token, PROVIDER_BASE_URL: 'http://127.0.0.1:9/sandbox/graph' });
    const url = await listeningUrl(service);
    const scrape = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(scrape.status, 200);
    assert.match(await scrape.text(), /^messaging_jobs_due\{job_name="webhook\.deliver"\} 0$/m);
    assert.equal((await fetch(`${url}/metrics`)).status, 401);
    for (const path of ['/healthz', '/v1/identity', '/sandbox/control/numbers']) {
      const response = await fetch(url + path);
      assert.equal(response.status, 404, path);
      assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'route_not_found', path);
    }
    service.child.kill('SIGTERM');
    const [code] = (await once(service.child, 'exit')) as [number];
    assert.equal(code, 0, service.output());
  });
});
