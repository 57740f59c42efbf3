import { runEventPurge, runStep, runTimeout } from '../../jobs/catalog.ts';
import { handleJob, type JobRegistration } from '../module.ts';
import type { RunEngine } from './run-engine.ts';
import type { RunsService } from './runs.service.ts';

export function runJobs(engine: RunEngine, service: RunsService): JobRegistration[] {
  return [
    handleJob(runStep, (payload, context) => engine.runStep(payload.run_id, payload.seq, { attempt: context.attempt, maxAttempts: context.maxAttempts })),
    handleJob(runTimeout, (payload) => engine.timeOut(payload.run_id)),
    handleJob(runEventPurge, async (_payload, context) => void (await service.purgeEvents({ signal: context.signal }))),
  ];
}
