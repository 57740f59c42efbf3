/**
 * The baseline for benchmarks, in a child process started by bench/lib.ts: bare Fastify with its
 * defaults (no logger, hooks, schemas or store) answering one route with fixed bytes, so that the
 * ratio isolates what the service adds on top of Node, HTTP and Fastify.
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { reportToParent } from './lib.ts';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; start the baseline through startBaseline() in bench/lib.ts`);
  return value;
}

const body = readFileSync(required('BENCH_BASELINE_BODY_FILE'));
const contentType = required('BENCH_BASELINE_CONTENT_TYPE');
const status = Number(required('BENCH_BASELINE_STATUS'));

const app = Fastify({ logger: false });
app.route({
  method: required('BENCH_BASELINE_METHOD'),
  url: required('BENCH_BASELINE_PATH'),
  handler: (_request, reply) => reply.code(status).type(contentType).send(body),
});
await app.listen({ port: 0, host: '127.0.0.1' });

const address = app.server.address();
if (!address || typeof address === 'string') throw new Error('the baseline did not bind a TCP port');
reportToParent(address.port, () => app.close());
