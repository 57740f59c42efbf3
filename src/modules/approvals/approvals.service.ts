import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ApprovalsTable } from '../../db/schema.ts';
import type { EventSink } from '../../events/emit.ts';
import { approvalExpire, approvalExpireKey } from '../../jobs/catalog.ts';
import type { Queue } from '../../jobs/queue.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { connectionScopeOf, type Actor, type Principal } from '../credentials/principal.ts';
import type { ApprovalRequest, ApprovalsForRuns, RunsForApprovals } from './approval-runs.ts';
import type { Approval, ApprovalDecision, ApprovalStatus, Approvers } from './approvals.schemas.ts';
import type { ApprovalFilters, ApprovalsStore } from './approvals.store.ts';

export interface ApprovalsServiceDeps {
  db: Db;
  clock: Clock;
  store: ApprovalsStore;
  queue: Pick<Queue, 'enqueue' | 'cancel'>;
  events: EventSink;
}

export function toApproval(row: ApprovalsTable): Approval {
  const decided = row.decided_by_member_id !== null || row.decided_by_key_id !== null;
  return {
    id: row.id,
    object: 'approval',
    run_id: row.run_id,
    automation_id: row.automation_id,
    step_id: row.step_id,
    status: row.status as ApprovalStatus,
    title: row.title,
    summary: row.summary,
    action: JSON.parse(row.action) as Record<string, unknown>,
    approvers: JSON.parse(row.approvers) as Approvers,
    requested_at: row.requested_at,
    expires_at: row.expires_at,
    decided_at: row.decided_at,
    decided_by: decided ? { member_id: row.decided_by_member_id, key_id: row.decided_by_key_id } : null,
    comment: row.comment,
  };
}

/** Who decided: a dashboard session's member, or the key (or OAuth token) itself. */
interface Decider {
  memberId: string | null;
  keyId: string | null;
  comment: string | null;
}

/**
 * Approvals: a run's request for a human decision before its action runs. Opening one (the run's
 * step), deciding it (approve, reject: the API), its expiry (a job) and its cancel (the run ended)
 * each end it once, by compare-and-set on its `pending` status with its run's row held, and move
 * the run in the same transaction.
 */
export function createApprovalsService(deps: ApprovalsServiceDeps) {
  const { db, clock, store, queue, events } = deps;
  let runs: RunsForApprovals | undefined;

  /** The runs module, for what a decision does to its run; it attaches itself when it is built. */
  function attachedRuns(): RunsForApprovals {
    if (!runs) throw new Error('runs are not attached to approvals');
    return runs;
  }

  async function emit(trx: Trx, type: 'approval.requested' | 'approval.decided', row: ApprovalsTable): Promise<void> {
    await events.emit(trx, { type, organizationId: row.organization_id, connectionId: row.connection_id, object: toApproval(row) });
  }

  /** Ends a pending approval (held, with its run held first) and moves its run unless the run itself ended it. */
  async function end(trx: Trx, row: ApprovalsTable, status: ApprovalDecision | 'canceled', by: Decider | null): Promise<ApprovalsTable> {
    const now = clock.now().toISOString();
    const changes = {
      status,
      decided_at: now,
      decided_by_member_id: by?.memberId ?? null,
      decided_by_key_id: by?.keyId ?? null,
      comment: by?.comment ?? null,
      updated_at: now,
    };
    await store.update(trx, row.id, changes);
    const ended = { ...row, ...changes };
    if (status !== 'expired') await queue.cancel(trx, approvalExpireKey(row.id));
    if (status !== 'canceled') {
      await attachedRuns().decided(trx, {
        runId: row.run_id,
        runSeq: row.run_seq,
        approvalId: row.id,
        stepId: row.step_id,
        status,
        plan: JSON.parse(row.plan),
      });
    }
    await emit(trx, 'approval.decided', ended);
    return ended;
  }

  /**
   * Whether the caller may decide: a listed member (by role or id) with a dashboard session; an API
   * key or OAuth token (which acts for no member) only when the step allows keys; never whoever
   * triggered the run, nor the member whose session did.
   */
  function authorize(principal: Principal, row: ApprovalsTable): void {
    const approvers = JSON.parse(row.approvers) as Approvers;
    const triggered = principal.credentialId === row.triggered_by || (principal.memberId !== null && principal.memberId === row.triggered_by_member_id);
    if (triggered) {
      throw new AppError(
        'role_insufficient',
        `Run ${row.run_id} was started by this ${principal.memberId ? 'member' : 'credential'}: someone else must decide its approval.`,
        {
          extra: { allowed_roles: approvers.roles },
        },
      );
    }
    if (principal.kind !== 'dashboard_token') {
      if (approvers.allow_api_keys) return;
      throw new AppError(
        'credential_kind_not_allowed',
        `Approval ${row.id} is for members signed in to the dashboard: its step does not allow API keys (approvers.allow_api_keys).`,
        { extra: { allowed_credentials: ['dashboard_token'] } },
      );
    }
    const listed = (principal.role !== null && approvers.roles.includes(principal.role)) || approvers.member_ids.includes(principal.memberId!);
    if (!listed) {
      throw new AppError('role_insufficient', `You are not among the approvers of ${row.id}: its step lists ${describeApprovers(approvers)}.`, {
        extra: { allowed_roles: approvers.roles },
      });
    }
  }

  async function visibleRow(executor: Db, principal: Principal, id: string): Promise<ApprovalsTable> {
    const row = await store.find(executor, connectionScopeOf(principal), id);
    if (!row) throw notFound('approval');
    return row;
  }

  async function decide(actor: Actor, id: string, decision: 'approved' | 'rejected', comment: string | undefined): Promise<Approval> {
    const { principal } = actor;
    return db.transaction().execute(async (trx) => {
      const seen = await visibleRow(trx, principal, id);
      authorize(principal, seen);
      await attachedRuns().hold(trx, seen.run_id);
      const row = (await store.lockById(trx, id))!;
      // Deciding again what was decided answers the approval as it is: a retried click changes nothing.
      if (row.status === decision) return toApproval(row);
      const verb = decision === 'approved' ? 'approved' : 'rejected';
      if (row.status !== 'pending') {
        throw new AppError('invalid_state', `Approval ${id} was already ${row.status} at ${row.decided_at}; it can no longer be ${verb}.`, {
          extra: { status: row.status },
        });
      }
      if (row.expires_at <= clock.now().toISOString()) {
        throw new AppError('invalid_state', `Approval ${id} expired at ${row.expires_at}; it can no longer be ${verb}.`, { extra: { status: 'expired' } });
      }
      const by: Decider = {
        memberId: principal.kind === 'dashboard_token' ? principal.memberId : null,
        keyId: principal.kind === 'dashboard_token' ? null : principal.credentialId,
        comment: comment ?? null,
      };
      return toApproval(await end(trx, row, decision, by));
    });
  }

  const forRuns: ApprovalsForRuns = {
    async open(trx: Trx, request: ApprovalRequest): Promise<Approval> {
      const now = clock.now();
      const row: ApprovalsTable = {
        id: newId('approval', now.getTime()),
        organization_id: request.organizationId,
        mode: request.mode,
        connection_id: request.connectionId,
        run_id: request.runId,
        run_seq: request.runSeq,
        automation_id: request.automationId,
        step_id: request.stepId,
        status: 'pending',
        title: request.title,
        summary: request.summary,
        action: JSON.stringify(request.action),
        plan: JSON.stringify(request.plan),
        approvers: JSON.stringify(request.approvers),
        triggered_by: request.triggeredBy,
        triggered_by_member_id: request.triggeredByMemberId,
        requested_at: now.toISOString(),
        expires_at: request.expiresAt.toISOString(),
        decided_at: null,
        decided_by_member_id: null,
        decided_by_key_id: null,
        comment: null,
        updated_at: now.toISOString(),
      };
      await store.insert(trx, row);
      await queue.enqueue(trx, approvalExpire, { approval_id: row.id }, { dedupeKey: approvalExpireKey(row.id), runAt: request.expiresAt });
      await emit(trx, 'approval.requested', row);
      return toApproval(row);
    },

    async cancelOpen(trx: Trx, runId: string): Promise<void> {
      const row = await store.lockPendingOfRun(trx, runId);
      if (row) await end(trx, row, 'canceled', null);
    },
  };

  return {
    ...forRuns,

    attachRuns(attached: RunsForApprovals): void {
      runs = attached;
    },

    async get(principal: Principal, id: string): Promise<Approval> {
      return toApproval(await visibleRow(db, principal, id));
    },

    async list(principal: Principal, filters: ApprovalFilters, page: PageRequest): Promise<Page<Approval>> {
      return mapPage(await store.list(db, connectionScopeOf(principal), filters, page), toApproval);
    },

    approve: (actor: Actor, id: string, comment: string | undefined) => decide(actor, id, 'approved', comment),
    reject: (actor: Actor, id: string, comment: string | undefined) => decide(actor, id, 'rejected', comment),

    /** The `approval.expire` job: an approval still pending at its deadline expires, and its run takes the `expired` branch. */
    async expire(approvalId: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const seen = await store.findById(trx, approvalId);
        if (!seen || seen.status !== 'pending') return;
        await attachedRuns().hold(trx, seen.run_id);
        const row = await store.lockById(trx, approvalId);
        if (!row || row.status !== 'pending' || row.expires_at > clock.now().toISOString()) return;
        await end(trx, row, 'expired', null);
      });
    },
  };
}

function describeApprovers(approvers: Approvers): string {
  const parts = [
    ...(approvers.roles.length > 0 ? [`roles ${approvers.roles.join(', ')}`] : []),
    ...(approvers.member_ids.length > 0 ? [`members ${approvers.member_ids.join(', ')}`] : []),
  ];
  return parts.length > 0 ? parts.join(' and ') : 'no members';
}

export type ApprovalsService = ReturnType<typeof createApprovalsService>;
