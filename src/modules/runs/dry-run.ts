/**
 * Dry runs: a run walked in one go on a virtual clock, with the customer's replies simulated. Each
 * step is planned exactly as a live run plans it (run-steps.ts) and each send is checked as a live
 * send is (window, template, consent), but nothing is sent, tagged or assigned: the side effects are
 * recorded in the event log, which the answer carries whole. The finished run is stored (`dry_run:
 * true`) so that it can be read again; it holds no conversation and counts toward nothing.
 */
import type { Db } from '../../db/connect.ts';
import type { RunsTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { DeployedAutomation } from '../automations/automation-runs.ts';
import type { Step, StepOf } from '../automations/definition.schemas.ts';
import { ExpressionError, type ExpressionContext } from '../automations/definition/expressions.ts';
import type { ConnectorsService } from '../connectors/index.ts';
import type { SendingService } from '../messages/index.ts';
import { endingEntry, failureOf, MAX_STEPS_PER_RUN, newRunRow, MAX_VISITS_PER_STEP, RunChange, runPrincipal, toRun, type RunEngine } from './run-engine.ts';
import { afterApproval, afterWait, describeAction, effectEntry, MAX_VARIABLES_BYTES, planStep, stepOf, takeReply, type StepPlan } from './run-steps.ts';
import type { Run, RunEvent, RunTrigger, TriggerRunInput } from './runs.schemas.ts';
import type { RunsStore } from './runs.store.ts';

type SimulatedReply = NonNullable<NonNullable<TriggerRunInput['simulate']>['replies']>[number];

export interface DryRunRequest {
  automation: DeployedAutomation;
  input: Record<string, unknown>;
  target: { connectionId: string | null; contactId: string | null; to: string | null; conversation: { id: string } | null };
  simulate: NonNullable<TriggerRunInput['simulate']>;
  replayOf: string | null;
  triggeredBy: string;
}

/** A simulated customer message, shaped as an inbound message is (what `message` reads in expressions). */
function simulatedMessage(reply: SimulatedReply, index: number, at: Date): Record<string, unknown> {
  const base = { id: `msg_simulated_${index + 1}`, object: 'message', direction: 'inbound', created_at: at.toISOString(), simulated: true };
  if (reply.button_id !== undefined) {
    return { ...base, type: 'interactive', interactive: { type: 'button_reply', button_reply: { id: reply.button_id, title: reply.button_id } } };
  }
  return { ...base, type: 'text', text: { body: reply.text ?? '' } };
}

export function createDryRuns(deps: {
  db: Db;
  clock: Clock;
  store: RunsStore;
  engine: Pick<RunEngine, 'contextOf'>;
  sending: Pick<SendingService, 'prepare'>;
  connectors: Pick<ConnectorsService, 'resolve'>;
}) {
  const { db, clock, store, engine, sending, connectors } = deps;

  async function walk(row: RunsTable, change: RunChange, automation: DeployedAutomation, simulate: DryRunRequest['simulate']): Promise<void> {
    const { definition } = automation;
    const replies = [...(simulate.replies ?? [])];
    const approvals = [...(simulate.approvals ?? [])];
    // The action step's plan an approved approval froze: that step runs it instead of rendering anew.
    const frozen = new Map<string, StepPlan>();
    const answers = [...(simulate.http ?? [])];
    let repliesUsed = 0;
    let now = new Date(Date.parse(row.created_at));
    const visits = new Map<string, number>();
    const context = async (): Promise<ExpressionContext> => ({ ...(await engine.contextOf(db, change.row)), now: now.toISOString() });
    const end = (status: 'completed' | 'failed', detail: { outcome?: string; reason?: string | null; code?: string; message?: string }) => {
      const error = detail.code === undefined ? undefined : { code: detail.code, message: detail.message ?? '', step_id: change.row.current_step_id };
      change.set({ status, finished_at: now.toISOString(), outcome: detail.outcome ?? null, error: error ? JSON.stringify(error) : null });
      change.note(
        `run.${status}`,
        change.row.current_step_id,
        endingEntry({ ...(detail.outcome ? { outcome: detail.outcome } : {}), reason: detail.reason ?? null, ...(error ? { error } : {}) }),
      );
    };
    const go = (next: string | null): boolean => {
      if (next === null) {
        end('completed', { outcome: 'completed' });
        return false;
      }
      change.set({ current_step_id: next });
      return true;
    };

    change.set({ status: 'running', started_at: now.toISOString() });
    change.note('run.started', null);
    for (;;) {
      const step = stepOf(definition, change.row.current_step_id!);
      if (!step) return end('failed', { code: 'invalid_state', message: `step ${change.row.current_step_id} does not exist` });
      const count = (visits.get(step.id) ?? 0) + 1;
      visits.set(step.id, count);
      change.set({ steps_executed: change.row.steps_executed + 1 });
      if (change.row.steps_executed > MAX_STEPS_PER_RUN || count > MAX_VISITS_PER_STEP) {
        return end('failed', { code: 'loop_guard', message: `the run went round step ${step.id} too often` });
      }
      change.note('step.started', step.id, { type: step.type });
      try {
        const plan: StepPlan = frozen.get(step.id) ?? planStep(step, await context(), now, definition);
        frozen.clear();
        switch (plan.kind) {
          case 'advance':
            if (plan.variables) setVariables(change, plan.variables);
            change.note('step.completed', step.id, plan.detail ?? {});
            if (!go(plan.next)) return;
            continue;
          case 'act': {
            let next = plan.next;
            if (plan.effect.type === 'send') {
              const skipTo = await checkSend(change.row, plan.effect, plan.next);
              if (skipTo !== undefined) {
                change.note('step.skipped', step.id, { reason: 'window_closed' });
                if (!go(skipTo)) return;
                continue;
              }
              // No contact on the entry: a simulated send does not count toward the live guard on automated messages.
              change.note('effect.message_queued', step.id, { simulated: true, content: plan.effect.content });
            } else {
              const entry = effectEntry(plan.effect);
              change.note(entry.type, step.id, { simulated: true, ...entry.data });
            }
            if (plan.effect.type === 'handoff') return end('completed', { outcome: 'handed_off' });
            change.note('step.completed', step.id);
            next = plan.next;
            if (!go(next)) return;
            continue;
          }
          case 'wait_for_reply': {
            const waitStep = step as StepOf<'wait_for_reply'>;
            const deadline = plan.until.getTime();
            let ending: 'replied' | 'timeout' = 'timeout';
            while (replies.length > 0) {
              const reply = replies[0]!;
              const arrives = now.getTime() + (reply.after_seconds ?? 1) * 1000;
              if (arrives >= deadline) break;
              replies.shift();
              now = new Date(arrives);
              change.moveTo(now);
              const message = simulatedMessage(reply, repliesUsed++, now);
              const outcome = takeReply(waitStep, message, await context());
              if (!outcome.taken) {
                change.note('wait.reply_ignored', step.id, { message_id: message.id, ...(outcome.error ? { error: outcome.error } : {}) });
                continue;
              }
              setVariables(change, outcome.variables);
              change.set({ last_message: JSON.stringify(message) });
              change.note('wait.replied', step.id, { message_id: message.id });
              ending = 'replied';
              break;
            }
            if (ending === 'timeout') {
              now = new Date(deadline);
              change.moveTo(now);
              change.note('wait.timed_out', step.id);
            }
            if (!go(afterWait(waitStep, ending))) return;
            continue;
          }
          case 'delay':
            now = plan.until;
            change.moveTo(now);
            change.note('wait.over', step.id);
            if (!go(plan.next)) return;
            continue;
          case 'http': {
            // The account and the URL are checked as a live run checks them; the answer is the next simulated one.
            const user = { organizationId: change.row.organization_id, mode: change.row.mode, connectionId: change.row.connection_id };
            let failure: { code: string; message: string } | undefined;
            try {
              const url = await connectors.resolve(db, user, plan.request.accountId, plan.request, '/connector_account_id');
              change.note('effect.http_request', step.id, { simulated: true, method: plan.request.method, url, attempt: 1 });
              const answer = answers.shift();
              if (answer === undefined) {
                failure = { code: 'invalid_state', message: 'no simulated answer was left for this request (simulate.http)' };
                change.note('effect.http_response', step.id, { simulated: true, error: failure.code });
              } else {
                change.note('effect.http_response', step.id, { simulated: true, status: answer.status });
                if (plan.saveAs !== null) setVariables(change, { [plan.saveAs]: { status: answer.status, headers: {}, body: answer.body ?? null } });
                if (answer.status < 200 || answer.status > 299) {
                  failure = {
                    code: answer.status >= 500 ? 'provider_unavailable' : 'provider_rejected',
                    message: `${plan.request.method} ${url} answered ${answer.status}`,
                  };
                }
              }
            } catch (error) {
              if (!(error instanceof AppError)) throw error;
              failure = { code: error.code, message: error.message };
            }
            if (failure === undefined) {
              change.note('step.completed', step.id);
              if (!go(plan.ok)) return;
              continue;
            }
            change.note('step.failed', step.id, failure);
            if (plan.error === null) return end('failed', failure);
            if (!go(plan.error)) return;
            continue;
          }
          case 'end':
            return end('completed', { outcome: plan.outcome, reason: plan.reason });
          case 'request_approval': {
            const approvalStep = step as StepOf<'request_approval'>;
            const actionStep: Step = stepOf(definition, plan.actionStepId)!;
            change.note('approval.requested', step.id, {
              simulated: true,
              title: plan.title,
              summary: plan.summary,
              action: describeAction(actionStep, plan.action),
              expires_at: plan.until.toISOString(),
            });
            // Each approval step takes the next simulated decision; none left, or one at or past the deadline, is an expiry.
            const simulated = approvals.shift();
            const decidedAt = simulated && simulated.decision !== 'expired' ? now.getTime() + (simulated.after_seconds ?? 1) * 1000 : Number.POSITIVE_INFINITY;
            const decision = decidedAt < plan.until.getTime() ? simulated!.decision : 'expired';
            now = decision === 'expired' ? plan.until : new Date(decidedAt);
            change.moveTo(now);
            change.note(`approval.${decision}`, step.id, { simulated: true });
            if (decision === 'approved') frozen.set(actionStep.id, plan.action);
            if (!go(afterApproval(approvalStep, decision))) return;
            continue;
          }
          case 'unavailable':
            return end('failed', { code: 'invalid_state', message: plan.message });
        }
      } catch (error) {
        const onError = 'on_error' in step ? (step.on_error ?? null) : null;
        const { code, message } = failureOf(error);
        const failure = { code, message };
        change.note('step.failed', step.id, failure);
        if (onError === null) return end('failed', failure);
        if (!go(onError)) return;
      }
    }
  }

  function setVariables(change: RunChange, variables: Record<string, unknown>): void {
    const text = JSON.stringify({ ...change.variables(), ...variables });
    if (Buffer.byteLength(text) > MAX_VARIABLES_BYTES) throw new ExpressionError('size', `the run's variables would exceed ${MAX_VARIABLES_BYTES / 1024} KB`);
    change.set({ variables: text });
  }

  /**
   * Checks a send as a live run would, when the run has a customer to send to (a dry run for a number
   * without a contact yet has nothing to check against). Answers where a closed window sends the run,
   * or undefined to go on; a refusal throws as the live step would.
   */
  async function checkSend(row: RunsTable, effect: { content: unknown; onWindowClosed: string }, next: string | null): Promise<string | null | undefined> {
    if (row.contact_id === null || row.connection_id === null) return undefined;
    try {
      await sending.prepare(runPrincipal(row), { ...(effect.content as object), connection_id: row.connection_id, contact_id: row.contact_id } as Parameters<
        SendingService['prepare']
      >[1]);
      return undefined;
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'window_closed' || effect.onWindowClosed === 'fail') throw error;
      return effect.onWindowClosed === 'skip' ? next : effect.onWindowClosed;
    }
  }

  return {
    async run(request: DryRunRequest): Promise<Run & { events: RunEvent[] }> {
      const { automation } = request;
      const now = clock.now();
      const trigger: RunTrigger = { type: 'api' };
      const row = newRunRow(
        {
          automation,
          trigger,
          triggerKey: null,
          target: { connectionId: request.target.connectionId, contactId: request.target.contactId, conversationId: request.target.conversation?.id ?? null },
          input: request.input,
          depth: 0,
          lastMessage: null,
          replayOf: request.replayOf,
          triggeredBy: request.triggeredBy,
          dryRun: true,
        },
        now,
      );
      const change = new RunChange(row, now);
      change.note('run.created', null, { trigger, dry_run: true, ...(request.target.to ? { to: request.target.to } : {}) });
      await walk(row, change, automation, request.simulate);
      await db.transaction().execute(async (trx) => {
        await store.insert(trx, change.row);
        await store.insertEvents(trx, change.entries);
      });
      const events = change.entries.map((entry): RunEvent => ({
        object: 'run_event',
        seq: entry.seq,
        type: entry.type,
        step_id: entry.step_id,
        at: entry.at,
        data: JSON.parse(entry.data) as Record<string, unknown>,
      }));
      return { ...toRun(change.row), events };
    },
  };
}

export type DryRuns = ReturnType<typeof createDryRuns>;
