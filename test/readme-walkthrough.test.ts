import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readmeAt, runWalkthrough } from '../scripts/readme-walkthrough.ts';
import { startServer, suiteScope, type TestServer } from './harness.ts';
import { listeningUrl, spawnService, storeEnv } from './service-process.ts';
import { waitFor } from './wait.ts';

describe('the README walkthrough', () => {
  // The store outlives the test: the service process and the receiver, the test's own, are stopped
  // when it ends, before the store is dropped under them (on PostgreSQL a schema dropped under a live
  // process deadlocks with its worker).
  const suite = suiteScope();
  let server: TestServer;
  before(async () => {
    server = await startServer(suite);
  });

  it('runs as pasted, from sign-up to a reply, and the receiver it starts prints the events', { timeout: 120_000 }, async (t) => {
    // The real service, started as the walkthrough's first block says.
    const service = spawnService(
      t,
      { ...storeEnv(server.testStore), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: '0' },
      server.testStore,
    );
    const url = await listeningUrl(service);
    const stderrFile = path.join(server.testStore.dataDir, 'walkthrough.stderr');
    const walkthrough = await runWalkthrough(readmeAt(fileURLToPath(new URL('..', import.meta.url))), url, stderrFile);
    t.after(() => walkthrough.stop());

    assert.equal(await walkthrough.finished, 0, `the walkthrough failed:\n${readFileSync(stderrFile, 'utf8')}\n${walkthrough.output()}`);
    const answers = walkthrough.output().split('\n');
    const reply = answers.find((line) => line.startsWith('{"id":"msg_'));
    assert.ok(reply, `the reply was accepted:\n${walkthrough.output()}`);
    assert.equal(JSON.parse(reply).status, 'queued');
    // The failures the README shows, with the codes it shows.
    assert.ok(answers.some((line) => line.includes('"code":"validation_failed"') && line.includes('"param":"/colour"')));
    assert.ok(answers.some((line) => line.includes('"code":"credential_kind_not_allowed"') && line.includes('an organization key')));

    // The service's worker sends the reply and delivers the events to the receiver the walkthrough started.
    await waitFor(() => ['connection.connected', 'message.received', 'message.sent'].every(walkthrough.delivered), {
      timeoutMs: 30_000,
      message: () => `the receiver to print the events:\n${walkthrough.output()}`,
    });
  });
});
