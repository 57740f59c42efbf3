/**
 * The larger fuzz run: `npm run fuzz -- --cases N --seed S [--only 'POST /v1/messages']`.
 * N is the number of cases per operation (default 200), S the seed (default: a new one, printed).
 * Starts its own server as the test does (TEST_DATABASE_URL and TEST_REDIS_URL apply), prints a
 * summary and every violation, and exits non-zero if there was one.
 */
import { parseArgs } from 'node:util';
import { randomSeed } from './random.ts';
import { describeViolation, healthProblems, runFuzz, summarize } from './runner.ts';
import { startFuzzServer } from './world.ts';

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '200' },
    seed: { type: 'string' },
    only: { type: 'string' },
  },
});
const cases = Number(values.cases);
const seed = values.seed === undefined ? randomSeed() : Number(values.seed);
if (!Number.isInteger(cases) || cases < 1) throw new Error(`--cases must be a positive whole number, not ${values.cases}`);
if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`--seed must be a whole number from 0 to 4294967295, not ${values.seed}`);

const cleanups: (() => unknown)[] = [];
let failed = false;
try {
  const setup = await startFuzzServer({ after: (cleanup) => void cleanups.push(cleanup) });
  console.log(`fuzz: seed ${seed}, ${cases} cases per operation, ${setup.operations.length} operations in the document`);
  const report = await runFuzz(setup.target, setup.operations, setup.world, {
    seed,
    cases,
    only: values.only,
    onOperation: process.stderr.isTTY
      ? (operation, done, total) => process.stderr.write(`\r[${done + 1}/${total}] ${operation.key}`.padEnd(80).slice(0, 80))
      : undefined,
  });
  if (process.stderr.isTTY) process.stderr.write('\n');
  for (const violation of report.violations) console.log(`\n${describeViolation(violation)}`);
  const health = await healthProblems(setup.target);
  for (const problem of health) console.log(`\n✗ ${problem}`);
  console.log(`\n${summarize(report)}`);
  const families = [...report.perFamily.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([family, count]) => `${family} ${count}`);
  console.log(`families: ${families.join(', ')}`);
  failed = report.violations.length > 0 || health.length > 0;
  if (failed) console.log(`\nreproduce: npm run fuzz -- --seed ${seed} --cases ${cases}${values.only === undefined ? '' : ` --only '${values.only}'`}`);
} finally {
  for (const cleanup of cleanups) await cleanup();
}
process.exitCode = failed ? 1 : 0;
