/**
 * Runs: the executions of automations. Owns the /v1/runs endpoints, the run engine (one queued job
 * per step, compare-and-set on the run's `seq`; run-engine.ts), the steps' plans (run-steps.ts), dry
 * runs on a virtual clock (dry-run.ts), and the event subscribers that start runs from messages,
 * new conversations and any event, hand replies to waiting runs and resume paused ones. Hands the
 * automations module its in-flight runs (`attachRuns`), which deploys and disables settle, and the
 * approvals module what moves a run when its approval is decided (approval-step.ts).
 */
import { ALL_EVENTS, type EventEmitter } from '../../events/emit.ts';
import type { RunsForApprovals } from '../approvals/index.ts';
import type { InFlightRuns } from '../automations/automation-runs.ts';
import type { ConversationsService } from '../conversations/index.ts';
import type { Module } from '../module.ts';
import { createDryRuns } from './dry-run.ts';
import { createRunEngine, type RunEngineDeps } from './run-engine.ts';
import { runJobs } from './runs.job.ts';
import { registerRunsRoutes } from './runs.routes.ts';
import { createRunsService, type RunsService, type RunsServiceDeps } from './runs.service.ts';
import { createRunsStore } from './runs.store.ts';

export type RunsModuleDeps = Omit<RunEngineDeps, 'store' | 'events' | 'automations'> &
  Pick<RunsServiceDeps, 'connections' | 'contacts'> & {
    conversations: RunsServiceDeps['conversations'] & Pick<ConversationsService, 'onFold'>;
    events: Pick<EventEmitter, 'emit' | 'subscribe'>;
    automations: RunsServiceDeps['automations'] & { attachRuns(runs: InFlightRuns): void };
    approvals: RunEngineDeps['approvals'] & { attachRuns(runs: RunsForApprovals): void };
  };

export function createRunsModule(deps: RunsModuleDeps): Module<RunsService> {
  const store = createRunsStore();
  const engine = createRunEngine({ ...deps, store });
  const dryRuns = createDryRuns({ db: deps.db, clock: deps.clock, store, engine, sending: deps.sending, connectors: deps.connectors });
  const service = createRunsService({ ...deps, store, engine, dryRuns });
  deps.automations.attachRuns(service.inFlight);
  deps.approvals.attachRuns(engine.forApprovals);
  // In the transaction of the fact: a run starts, or a reply reaches its run, with the message or not at all.
  deps.events.subscribe(['message.received'], (trx, event) => service.onMessageReceived(trx, event));
  deps.events.subscribe(['conversation.created'], (trx, event) => service.onConversationCreated(trx, event));
  deps.events.subscribe(['conversation.updated'], (trx, event) => service.onConversationUpdated(trx, event));
  deps.events.subscribe(['conversation.lock_changed'], (trx, event) => service.onLockChanged(trx, event));
  deps.events.subscribe(ALL_EVENTS, (trx, event) => service.onEvent(trx, event));
  deps.conversations.onFold((trx, from, to) => service.onConversationFolded(trx, from, to));
  return { name: 'runs', service, routes: (server) => registerRunsRoutes(server, service), jobs: runJobs(engine, service) };
}

export type { RunsService } from './runs.service.ts';
export type { Run } from './runs.schemas.ts';
