/**
 * `npm run bench` runs every bench below in turn; `npm run bench -- <name>...` runs those named.
 * Each bench is its own process, so one bench's heap, JIT state and leftover sockets cannot colour
 * the next one's figures.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

interface Bench {
  name: string;
  file: string;
  description: string;
}

// Adding a bench: one line here, one file beside this one, one section in docs/benchmarks.md.
const BENCHES: Bench[] = [
  { name: 'identity', file: 'identity.ts', description: 'GET /v1/identity with an organization key vs bare Fastify sending the same bytes' },
  { name: 'idempotency', file: 'idempotency.ts', description: 'POST /v1/api-keys with a unique Idempotency-Key vs the same POST without one' },
  { name: 'list', file: 'list.ts', description: 'GET /v1/events?limit=25 over 100k audit rows vs bare Fastify; then every page with after, first vs last' },
  { name: 'webhooks', file: 'webhooks.ts', description: 'webhook events emitted in the service to loopback receivers vs raw undici POSTs of the same bodies' },
  {
    name: 'webhooks-floor',
    file: 'webhooks-floor.ts',
    description: "the webhooks pipeline's floor: the same writes in hand-written prepared statements on the service's schema vs the same raw POSTs",
  },
  {
    name: 'pacing',
    file: 'pacing.ts',
    description: 'a burst of 2,000 sends at one number paced to 100/s, cloud adapter to the sandbox: most in any second, time vs ideal',
  },
  {
    name: 'notifications',
    file: 'notifications.ts',
    description:
      'a batch of 1,000 notifications at a 100/s ceiling through the service to the sandbox: time to all sent vs 10 s, most in any second, API accept time',
  },
  {
    name: 'inbound',
    file: 'inbound.ts',
    description:
      'signed provider webhooks POSTed at /provider/webhook: accepted/s and processed/s (message stored, event emitted) vs bare Fastify checking the signature',
  },
  {
    name: 'automations',
    file: 'automations.ts',
    description:
      'signed provider webhooks that each start a 3-step run (reply, wait, end): runs/s to every reply at the sandbox vs the same webhooks with no automation; step latency',
  },
  {
    name: 'send',
    file: 'send.ts',
    description: 'POST /v1/messages (text, an Idempotency-Key each) through the queue to the sandbox vs a bare Fastify POST route',
  },
  {
    name: 'runtime',
    file: 'runtime.ts',
    description: 'GET /runtime/v24.0/{pn} with a connection key vs the same sandbox endpoint called directly with the business token',
  },
  {
    name: 'conversations',
    file: 'conversations.ts',
    description: 'GET /v1/conversations?expand=contact,last_message&limit=25 over 50k conversations vs bare Fastify; SQL queries per page at limit 10 and 100',
  },
  {
    name: 'conversations-floor',
    file: 'conversations-floor.ts',
    description: "the conversations page's floor: the same page from the service's SQLite file with nothing but its reads, mappers and JSON vs bare Fastify",
  },
];

function printKnown(): void {
  console.error('known benches:');
  for (const bench of BENCHES) console.error(`  ${bench.name.padEnd(12)} ${bench.description}`);
}

function runOne(bench: Bench): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(import.meta.dirname, bench.file)], { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const names = process.argv.slice(2);
const unknown = names.filter((name) => !BENCHES.some((bench) => bench.name === name));
if (unknown.length > 0) {
  console.error(`unknown bench: ${unknown.join(', ')}`);
  printKnown();
  process.exit(1);
}

const selected = names.length === 0 ? BENCHES : BENCHES.filter((bench) => names.includes(bench.name));
const failed: string[] = [];
for (const bench of selected) {
  console.log(`\n== ${bench.name}: ${bench.description}`);
  if ((await runOne(bench)) !== 0) failed.push(bench.name);
}
if (failed.length > 0) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exitCode = 1;
}
