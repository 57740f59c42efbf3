/**
 * The contract between approvals and runs. A run's `request_approval` step opens an approval in its
 * own transaction (`ApprovalsForRuns.open`), and a run that ends while one is open cancels it
 * (`cancelOpen`). A decision (or the expiry) must move the waiting run in the decision's
 * transaction: the runs module hands that over with `attachRuns` (`RunsForApprovals`), so neither
 * module imports the other's service. Lock order, everywhere: the run's row first, then the
 * approval's, so a decision and a cancel racing serialize on the run and cannot deadlock.
 */
import type { Trx } from '../../db/connect.ts';
import type { Approval, ApprovalDecision, Approvers } from './approvals.schemas.ts';

export interface ApprovalRequest {
  organizationId: string;
  mode: string;
  connectionId: string | null;
  runId: string;
  /** The run's `seq` while it waits on this approval. */
  runSeq: number;
  automationId: string;
  stepId: string;
  title: string;
  summary: string | null;
  /** What the API shows of the frozen action. */
  action: Record<string, unknown>;
  /** The frozen plan of the action step, handed back to the run on approval. */
  plan: unknown;
  approvers: Approvers;
  expiresAt: Date;
  triggeredBy: string | null;
  triggeredByMemberId: string | null;
}

export interface ApprovalsForRuns {
  /** Files a pending approval, emits `approval.requested` and schedules its expiry, in the run's transaction. */
  open(trx: Trx, request: ApprovalRequest): Promise<Approval>;
  /** The run ended (canceled, timed out, settled by a deploy): its pending approval ends `canceled`, with `approval.decided`. */
  cancelOpen(trx: Trx, runId: string): Promise<void>;
}

export interface RunsForApprovals {
  /** Locks the run's row (taken before the approval's, by every path that changes both). */
  hold(trx: Trx, runId: string): Promise<void>;
  /**
   * The approval ended by a decision or its expiry: the run, still waiting at `runSeq`, goes on
   * (approved: to the action step with the frozen plan; rejected, expired: their branches).
   */
  decided(trx: Trx, decision: { runId: string; runSeq: number; approvalId: string; stepId: string; status: ApprovalDecision; plan: unknown }): Promise<void>;
}
