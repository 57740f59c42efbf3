/**
 * The fuzz suite: every operation of the served OpenAPI document, mutated in bounded, seeded ways
 * (test/fuzz/mutations.ts), must answer without a 5xx, a hang or a bare error, and leave the server
 * healthy. A run with more cases: `npm run fuzz -- --cases 200 --seed <seed>` (docs/testing.md).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { suiteScope } from '../harness.ts';
import { FAMILY_NAMES } from './mutations.ts';
import { randomSeed } from './random.ts';
import { describeViolation, healthProblems, runFuzz, summarize, type FuzzReport } from './runner.ts';
import { startFuzzServer, type FuzzSetup } from './world.ts';

/** About one case for each family that applies to a write with a body: some 3,000 requests in all. */
const CASES_PER_OPERATION = 24;
const seed = process.env.FUZZ_SEED === undefined ? randomSeed() : Number(process.env.FUZZ_SEED);

describe('fuzzing every operation of the OpenAPI document', () => {
  let setup: FuzzSetup;
  let report: FuzzReport;
  const suite = suiteScope();
  before(async () => {
    setup = await startFuzzServer(suite);
    report = await runFuzz(setup.target, setup.operations, setup.world, { seed, cases: CASES_PER_OPERATION });
  });

  it('sends cases to every operation of the document, and cases of every mutation family', () => {
    const missed = setup.operations.filter((operation) => !report.perOperation.has(operation.key)).map((operation) => operation.key);
    assert.deepEqual(missed, [], 'operations without a case');
    assert.deepEqual(
      FAMILY_NAMES.filter((family) => !report.perFamily.has(family)),
      [],
      'mutation families that made no case',
    );
  });

  it('answers every mutated request without a 5xx, a hang, a bare error or missing headers', () => {
    const shown = report.violations.slice(0, 25).map(describeViolation);
    assert.equal(
      report.violations.length,
      0,
      [
        summarize(report),
        `reproduce: FUZZ_SEED=${seed} node --test test/fuzz/fuzz.test.ts, or npm run fuzz -- --seed ${seed} --cases ${CASES_PER_OPERATION}`,
        ...shown,
        ...(report.violations.length > shown.length ? [`… and ${report.violations.length - shown.length} more`] : []),
      ].join('\n\n'),
    );
  });

  it('is healthy after the run, and serves an ordinary request', async () => {
    assert.deepEqual(await healthProblems(setup.target), [], `seed ${seed}`);
  });
});
