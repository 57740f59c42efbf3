/**
 * Approvals: a run's request for a human decision before its action runs (the `request_approval`
 * step). Owns /v1/approvals (list, get, approve, reject), who may decide, the frozen action each
 * approval carries, its expiry job, and the events `approval.requested` and `approval.decided`. Runs
 * open and cancel approvals through `forRuns`; the runs module hands back, with `attachRuns`, what
 * moves a run when its approval is decided (approval-runs.ts).
 */
import type { Module } from '../module.ts';
import { approvalJobs } from './approvals.job.ts';
import { registerApprovalsRoutes } from './approvals.routes.ts';
import { createApprovalsService, type ApprovalsService, type ApprovalsServiceDeps } from './approvals.service.ts';
import { createApprovalsStore } from './approvals.store.ts';

export function createApprovalsModule(deps: Omit<ApprovalsServiceDeps, 'store'>): Module<ApprovalsService> {
  const service = createApprovalsService({ ...deps, store: createApprovalsStore() });
  return { name: 'approvals', service, routes: (server) => registerApprovalsRoutes(server, service), jobs: approvalJobs(service) };
}

export type { ApprovalsService } from './approvals.service.ts';
export type { Approval } from './approvals.schemas.ts';
export type { ApprovalsForRuns, RunsForApprovals, ApprovalRequest } from './approval-runs.ts';
