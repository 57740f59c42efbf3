import { runStep, runTimeout } from '../../jobs/catalog.ts';
import { handleJob } from '../module.ts';
import type { RunEngine } from './run-engine.ts';

export function runJobs(engine: RunEngine) {
  return [handleJob(runStep, (payload) => engine.runStep(payload.run_id, payload.seq)), handleJob(runTimeout, (payload) => engine.timeOut(payload.run_id))];
}
