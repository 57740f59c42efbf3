/**
 * The live run engine. Every step is one `run.step {run_id, seq}` job; in one transaction it locks
 * the run, acts only while the run's `seq` is still the job's (compare-and-set), carries out the
 * step's plan (run-steps.ts), advances `seq` and queues what comes next. A stale or repeated job
 * finds another `seq` and does nothing; a crash before the commit leaves the job to run again with
 * nothing done, and after it leaves nothing to do: a step's side effect (a message filed and queued,
 * a tag, an assignment) commits with the step, exactly once.
 */
import type { Db, Trx } from '../../db/connect.ts';
import type { RunEventsTable, RunsTable } from '../../db/schema.ts';
import type { EventSink } from '../../events/emit.ts';
import { runStep, runStepKey, runTimeout, runTimeoutKey } from '../../jobs/catalog.ts';
import type { Queue } from '../../jobs/queue.ts';
import { MINUTE, type Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Log } from '../../lib/log.ts';
import type { ApprovalsForRuns, RunsForApprovals } from '../approvals/index.ts';
import type { AutomationsForRuns, DeployedAutomation } from '../automations/automation-runs.ts';
import { DEFAULT_RUN_TIMEOUT_SECONDS, type Definition, type Step, type StepOf } from '../automations/definition.schemas.ts';
import { ExpressionError, type ExpressionContext } from '../automations/definition/expressions.ts';
import type { ConnectorsService } from '../connectors/index.ts';
import type { ContactsService } from '../contacts/index.ts';
import type { ConversationLocksService } from '../conversation-locks/index.ts';
import type { ConversationsService } from '../conversations/index.ts';
import type { Principal } from '../credentials/principal.ts';
import { SCOPES } from '../credentials/scopes.schemas.ts';
import type { SendingService } from '../messages/index.ts';
import { approvalRequest, frozenActionOf } from './approval-step.ts';
import { createHttpStep, type Attempt, type PendingHttp } from './http-step.ts';
import {
  afterApproval,
  afterWait,
  effectEntry,
  evaluatesExpressions,
  MAX_VARIABLES_BYTES,
  planStep,
  stepOf,
  takeReply,
  type Effect,
  type StepPlan,
} from './run-steps.ts';
import type { Run, RunError, RunStatus, RunTrigger, WaitingFor } from './runs.schemas.ts';
import type { RunChanges, RunsStore } from './runs.store.ts';

/** Runtime loop guards (docs/automations.md#loop-guards). */
export const MAX_STEPS_PER_RUN = 500;
export const MAX_VISITS_PER_STEP = 50;
export const MAX_AUTOMATED_SENDS_PER_CONTACT = 10;
export const AUTOMATED_SENDS_WINDOW_MS = MINUTE;
export const MAX_CHAIN_DEPTH = 3;

const FINAL: ReadonlySet<string> = new Set<RunStatus>(['completed', 'canceled', 'failed', 'timed_out']);
export const isFinal = (status: string) => FINAL.has(status);

export function toRun(row: RunsTable): Run {
  return {
    id: row.id,
    object: 'run',
    automation_id: row.automation_id,
    version: row.version,
    mode: row.mode as Run['mode'],
    dry_run: row.dry_run === 1,
    connection_id: row.connection_id,
    conversation_id: row.conversation_id,
    contact_id: row.contact_id,
    trigger: JSON.parse(row.trigger) as RunTrigger,
    status: row.status as RunStatus,
    current_step_id: row.current_step_id,
    waiting_for: row.waiting_for === null ? null : (JSON.parse(row.waiting_for) as WaitingFor),
    input: JSON.parse(row.input) as Record<string, unknown>,
    variables: JSON.parse(row.variables) as Record<string, unknown>,
    outcome: row.outcome,
    error: row.error === null ? null : (JSON.parse(row.error) as RunError),
    steps_executed: row.steps_executed,
    replay_of: row.replay_of,
    timeout_at: row.timeout_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
    created_at: row.created_at,
  };
}

/** What a new run is made of; `newRunRow` fills in the rest, as every run starts. */
export interface NewRun {
  automation: DeployedAutomation;
  trigger: RunTrigger;
  /** Unique per automation: what started it (a message, an event), so that processing it twice starts one run. */
  triggerKey: string | null;
  target: { connectionId: string | null; contactId: string | null; conversationId: string | null };
  input: Record<string, unknown>;
  depth: number;
  lastMessage: Record<string, unknown> | null;
  replayOf?: string | null;
  triggeredBy?: string | null;
  /** The member behind `triggeredBy`, when it is a dashboard session. */
  triggeredByMemberId?: string | null;
  dryRun?: boolean;
}

/** A run as it is created: `queued` at its definition's `start`, its time-out counted from `now`. */
export function newRunRow(run: NewRun, now: Date): RunsTable {
  const { automation, target } = run;
  const at = now.toISOString();
  const timeoutSeconds = automation.definition.timeout_seconds ?? DEFAULT_RUN_TIMEOUT_SECONDS;
  return {
    id: newId('run', now.getTime()),
    organization_id: automation.organizationId,
    automation_id: automation.automationId,
    version: automation.version,
    mode: automation.mode,
    dry_run: run.dryRun === true ? 1 : 0,
    connection_id: target.connectionId,
    conversation_id: target.conversationId,
    contact_id: target.contactId,
    trigger: JSON.stringify(run.trigger),
    trigger_key: run.triggerKey,
    depth: run.depth,
    status: 'queued',
    seq: 0,
    current_step_id: automation.definition.start,
    step_started_at: at,
    waiting_for: null,
    last_message: run.lastMessage === null ? null : JSON.stringify(run.lastMessage),
    early_reply: null,
    input: JSON.stringify(run.input),
    variables: '{}',
    visits: '{}',
    outcome: null,
    error: null,
    steps_executed: 0,
    event_count: 0,
    replay_of: run.replayOf ?? null,
    triggered_by: run.triggeredBy ?? null,
    triggered_by_member_id: run.triggeredByMemberId ?? null,
    approved_action: null,
    timeout_at: new Date(now.getTime() + timeoutSeconds * 1000).toISOString(),
    started_at: null,
    finished_at: null,
    created_at: at,
    updated_at: at,
  };
}

/**
 * A run acts for its organization without a caller: as a credential of its own (the run's id, in
 * the audit trail), able to see both modes, holding no member's lock.
 */
export function runPrincipal(row: Pick<RunsTable, 'id' | 'organization_id'>): Principal {
  return {
    kind: 'organization_key',
    credentialId: row.id,
    organizationId: row.organization_id,
    memberId: null,
    role: null,
    mode: null,
    connectionId: null,
    scopes: new Set(SCOPES),
  };
}

/** The data of a run's last event-log entry (`run.completed`, `run.failed`, ...), live or dry. */
export function endingEntry(detail: { outcome?: string; reason?: string | null; error?: RunError }): Record<string, unknown> {
  return {
    ...(detail.outcome ? { outcome: detail.outcome } : {}),
    ...(detail.reason ? { reason: detail.reason } : {}),
    ...(detail.error ? { error: detail.error } : {}),
  };
}

/** What a run's transaction caused, for the triggers of events emitted in it (chain depth, no self-trigger). */
export interface RunCause {
  automationId: string;
  depth: number;
}
const causes = new WeakMap<Trx, RunCause>();
export const causeOf = (trx: Trx): RunCause | undefined => causes.get(trx);

/**
 * One run being changed in a transaction: its row as it becomes, the columns that changed and the
 * event-log entries to append, written together by `save`.
 */
export class RunChange {
  readonly row: RunsTable;
  readonly changes: RunChanges = {};
  readonly entries: RunEventsTable[] = [];
  private now: string;

  constructor(row: RunsTable, now: Date) {
    this.row = { ...row };
    this.now = now.toISOString();
  }

  /** The time the next entries are logged at (a dry run's virtual clock moves). */
  moveTo(at: Date): void {
    this.now = at.toISOString();
  }

  set(changes: RunChanges): void {
    Object.assign(this.row, changes);
    Object.assign(this.changes, changes);
  }

  note(type: string, stepId: string | null, data: Record<string, unknown> = {}, contactId: string | null = null): void {
    const seq = this.row.event_count + 1;
    this.set({ event_count: seq });
    this.entries.push({
      run_id: this.row.id,
      seq,
      organization_id: this.row.organization_id,
      type,
      step_id: stepId,
      contact_id: contactId,
      at: this.now,
      data: JSON.stringify(data),
    });
  }

  /** Moves the compare-and-set counter: every job queued for the old `seq` is stale from now on. */
  bump(): number {
    const seq = this.row.seq + 1;
    this.set({ seq, updated_at: this.now });
    return seq;
  }

  variables(): Record<string, unknown> {
    return JSON.parse(this.row.variables) as Record<string, unknown>;
  }

  async save(trx: Trx, store: RunsStore): Promise<void> {
    if (Object.keys(this.changes).length > 0) await store.update(trx, this.row.id, this.changes);
    if (this.entries.length > 0) await store.insertEvents(trx, this.entries);
  }
}

/** A step failed: the catalogue's code when the failure was one, and why. */
class StepFailure extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** A step's failure as the run records it; anything else thrown is a fault of the service, not of the step. */
export function failureOf(error: unknown): StepFailure {
  if (error instanceof StepFailure) return error;
  if (error instanceof ExpressionError) return new StepFailure('expression_failed', error.message);
  if (error instanceof AppError) return new StepFailure(error.code, error.message);
  if (error instanceof TypeError) return new StepFailure('expression_failed', error.message);
  throw error;
}

export interface RunEngineDeps {
  db: Db;
  clock: Clock;
  queue: Pick<Queue, 'enqueue' | 'cancel'>;
  events: EventSink;
  log: Log;
  store: RunsStore;
  automations: AutomationsForRuns;
  conversations: Pick<ConversationsService, 'lockForRun' | 'changeForRun' | 'getForReference'>;
  contacts: Pick<ContactsService, 'getForReference'>;
  sending: Pick<SendingService, 'prepare' | 'storeChecked'>;
  locks: Pick<ConversationLocksService, 'assertMaySend'>;
  approvals: ApprovalsForRuns;
  connectors: Pick<ConnectorsService, 'resolve' | 'call'>;
}

export function createRunEngine(deps: RunEngineDeps) {
  const { db, clock, queue, events, store, automations, conversations, contacts, sending, locks, approvals } = deps;

  // Versions are immutable: a definition read once serves every later step of every run on it.
  const definitions = new Map<string, Definition>();
  async function definitionOf(executor: Db, row: RunsTable): Promise<Definition> {
    const key = `${row.automation_id}:${row.version}`;
    const cached = definitions.get(key);
    if (cached) return cached;
    const version = await automations.versionForRun(executor, row.organization_id, row.automation_id, row.version);
    if (!version) throw new Error(`run ${row.id}: version ${row.version} of ${row.automation_id} is gone`);
    if (definitions.size >= 1000) definitions.delete(definitions.keys().next().value!);
    definitions.set(key, version.definition);
    return version.definition;
  }

  /**
   * What expressions read, as of now: the run's own data, and its contact and conversation as they are.
   * A step that evaluates nothing (`readRecords` false) is spared the two reads.
   */
  async function contextOf(executor: Db, row: RunsTable, readRecords = true): Promise<ExpressionContext> {
    const principal = runPrincipal(row);
    const read = <T>(id: string | null, find: (id: string) => Promise<T>) => (readRecords && id !== null ? find(id).catch(() => null) : null);
    const conversation = await read(row.conversation_id, (id) => conversations.getForReference(executor, principal, id));
    // The thread's customer as it is now: a contact merge may have moved the thread to the survivor.
    const contact = await read(conversation?.contact_id ?? row.contact_id, (id) => contacts.getForReference(executor, principal, id, '/contact_id'));
    return {
      input: JSON.parse(row.input) as Record<string, unknown>,
      vars: JSON.parse(row.variables) as Record<string, unknown>,
      trigger: JSON.parse(row.trigger) as Record<string, unknown>,
      message: row.last_message === null ? null : (JSON.parse(row.last_message) as Record<string, unknown>),
      contact: contact as Record<string, unknown> | null,
      conversation: conversation as Record<string, unknown> | null,
      run: { id: row.id, automation_id: row.automation_id, version: row.version, started_at: row.started_at, steps_executed: row.steps_executed },
      now: clock.now().toISOString(),
    };
  }

  function setVariables(change: RunChange, variables: Record<string, unknown>): void {
    const text = JSON.stringify({ ...change.variables(), ...variables });
    if (Buffer.byteLength(text) > MAX_VARIABLES_BYTES)
      throw new StepFailure('expression_failed', `the run's variables would exceed ${MAX_VARIABLES_BYTES / 1024} KB`);
    change.set({ variables: text });
  }

  async function emitRun(trx: Trx, type: 'automation.run_started' | 'automation.run_finished' | 'automation.run_failed', row: RunsTable): Promise<void> {
    await events.emit(trx, { type, organizationId: row.organization_id, connectionId: row.connection_id, object: toRun(row) });
  }

  /**
   * Ends a run: its status, the event, the conversation handed back (`api`; `agent` after a handoff,
   * which set it already), its timers stale, and, for a live run, its count toward auto-disable.
   */
  async function finish(
    trx: Trx,
    change: RunChange,
    status: 'completed' | 'canceled' | 'failed' | 'timed_out',
    detail: { outcome?: string; reason?: string | null; error?: RunError },
  ) {
    const now = clock.now().toISOString();
    // A run that ends while it waits on an approval ends the approval too (canceled, approval.decided).
    if (change.row.status === 'waiting' && (JSON.parse(change.row.waiting_for!) as WaitingFor).type === 'approval') {
      await approvals.cancelOpen(trx, change.row.id);
    }
    change.bump();
    change.set({
      status,
      finished_at: now,
      waiting_for: null,
      outcome: detail.outcome ?? null,
      error: detail.error ? JSON.stringify(detail.error) : null,
    });
    change.note(`run.${status}`, change.row.current_step_id, endingEntry(detail));
    await change.save(trx, store);
    await queue.cancel(trx, runTimeoutKey(change.row.id));
    const { row } = change;
    if (row.conversation_id !== null && row.dry_run === 0) {
      const conversation = await conversations.lockForRun(trx, row.conversation_id);
      if (conversation?.control === 'automation') await conversations.changeForRun(trx, row.conversation_id, { control: 'api' });
    }
    await emitRun(trx, status === 'completed' || status === 'canceled' ? 'automation.run_finished' : 'automation.run_failed', row);
    if (row.dry_run === 0 && status !== 'canceled') {
      await automations.recordRunEnded(trx, row.organization_id, row.automation_id, status === 'completed' ? 'succeeded' : 'failed');
    }
  }

  async function fail(trx: Trx, change: RunChange, code: string, message: string): Promise<void> {
    await finish(trx, change, 'failed', { error: { code, message, step_id: change.row.current_step_id } });
  }

  /** Goes on to `next` (null: the run is done) and queues its step. */
  async function advance(trx: Trx, change: RunChange, next: string | null): Promise<void> {
    if (next === null) return finish(trx, change, 'completed', { outcome: 'completed' });
    const seq = change.bump();
    change.set({ status: 'running', current_step_id: next, step_started_at: clock.now().toISOString(), waiting_for: null });
    // An approved action is kept until the run moves past its step (a pause there resumes with it).
    if (change.row.approved_action !== null && frozenActionOf(change.row, next) === undefined) change.set({ approved_action: null });
    await change.save(trx, store);
    await queue.enqueue(trx, runStep, { run_id: change.row.id, seq }, { dedupeKey: runStepKey(change.row.id, seq) });
  }

  /** Waits until `until` (a reply's time-out or a delay's end): the wake-up is the step job of the new `seq`. */
  async function wait(trx: Trx, change: RunChange, waitingFor: WaitingFor): Promise<void> {
    const seq = change.bump();
    change.set({ status: 'waiting', waiting_for: JSON.stringify(waitingFor) });
    change.note(`wait.${waitingFor.type}`, change.row.current_step_id, { until: waitingFor.until });
    await change.save(trx, store);
    await queue.enqueue(trx, runStep, { run_id: change.row.id, seq }, { dedupeKey: runStepKey(change.row.id, seq), runAt: new Date(waitingFor.until!) });
  }

  /** The conversation is not the run's to act in: paused before the side effect; handing control back resumes it. */
  async function pause(trx: Trx, change: RunChange, why: Record<string, unknown>): Promise<void> {
    change.bump();
    change.set({ status: 'paused', waiting_for: JSON.stringify({ type: 'control', until: null, approval_id: null } satisfies WaitingFor) });
    change.note('control.lost', change.row.current_step_id, why);
    await change.save(trx, store);
  }

  /** Whether the run may act in its conversation now: control is `automation` and no member's lock binds it. */
  async function standing(trx: Trx, row: RunsTable): Promise<{ free: true } | { free: false; why: Record<string, unknown> }> {
    if (row.conversation_id === null) return { free: true };
    const conversation = await conversations.lockForRun(trx, row.conversation_id);
    if (!conversation) throw new StepFailure('resource_not_found', 'The run’s conversation no longer exists.');
    if (conversation.control !== 'automation') return { free: false, why: { control: conversation.control } };
    try {
      await locks.assertMaySend(trx, row.conversation_id, runPrincipal(row));
    } catch (error) {
      if (error instanceof AppError && error.code === 'conversation_locked') return { free: false, why: { locked: true } };
      throw error;
    }
    return { free: true };
  }

  const http = createHttpStep({
    db,
    store,
    connectors: deps.connectors,
    changeOf: (row) => new RunChange(row, clock.now()),
    advance,
    fail,
    setVariables,
  });

  /** Checks a send before the step's transaction (send checks read on their own handle); a refusal is the step's failure. */
  async function prepareSend(row: RunsTable, content: Effect & { type: 'send' }, context: ExpressionContext) {
    // The conversation's customer as it is now: a contact merge may have moved the thread to the survivor.
    const contactId = typeof context.conversation?.contact_id === 'string' ? context.conversation.contact_id : row.contact_id;
    if (contactId === null || row.connection_id === null) throw new StepFailure('invalid_state', 'The run has no customer to send to.');
    return sending.prepare(runPrincipal(row), {
      ...content.content,
      connection_id: row.connection_id,
      contact_id: contactId,
      metadata: { automation_id: row.automation_id, run_id: row.id },
    });
  }

  /** Carries out a side effect in the step's transaction, recording it first in the event log. */
  async function perform(trx: Trx, change: RunChange, effect: Effect, prepared: Awaited<ReturnType<typeof prepareSend>> | undefined): Promise<void> {
    const { row } = change;
    const stepId = row.current_step_id;
    switch (effect.type) {
      case 'send': {
        const since = new Date(clock.now().getTime() - AUTOMATED_SENDS_WINDOW_MS).toISOString();
        const contactId = prepared!.contact?.id ?? row.contact_id!;
        if ((await store.countAutomatedSends(trx, contactId, since)) >= MAX_AUTOMATED_SENDS_PER_CONTACT) {
          throw new StepFailure('loop_guard', `more than ${MAX_AUTOMATED_SENDS_PER_CONTACT} automated messages to this contact within a minute`);
        }
        const message = await sending.storeChecked(trx, prepared!);
        change.note('effect.message_queued', stepId, { message_id: message.id, type: message.type }, message.contact_id);
        return;
      }
    }
    if (row.conversation_id === null) throw new StepFailure('invalid_state', 'The run has no conversation to change.');
    const entry = effectEntry(effect);
    change.note(entry.type, stepId, entry.data);
    switch (effect.type) {
      case 'tags':
        await conversations.changeForRun(trx, row.conversation_id, { addTags: effect.add, removeTags: effect.remove });
        return;
      case 'assign':
        await conversations.changeForRun(trx, row.conversation_id, { assigneeId: effect.memberId });
        return;
      case 'handoff':
        await conversations.changeForRun(trx, row.conversation_id, { control: 'agent', ...(effect.assignTo ? { assigneeId: effect.assignTo } : {}) });
        return;
    }
  }

  /** A failed step: to its error branch when it has one, otherwise the run fails. */
  async function failStep(trx: Trx, change: RunChange, failure: StepFailure, onError: string | null): Promise<void> {
    change.note('step.failed', change.row.current_step_id, { code: failure.code, message: failure.message });
    if (onError !== null && failure.code !== 'loop_guard') return advance(trx, change, onError);
    await fail(trx, change, failure.code, failure.message);
  }

  /** Counts the step against the runtime loop guards; answers the failure when one trips. */
  function countStep(change: RunChange): StepFailure | undefined {
    const stepId = change.row.current_step_id!;
    const visits = JSON.parse(change.row.visits) as Record<string, number>;
    visits[stepId] = (visits[stepId] ?? 0) + 1;
    change.set({ steps_executed: change.row.steps_executed + 1, visits: JSON.stringify(visits) });
    if (change.row.steps_executed > MAX_STEPS_PER_RUN) return new StepFailure('loop_guard', `the run executed more than ${MAX_STEPS_PER_RUN} steps`);
    if (visits[stepId] > MAX_VISITS_PER_STEP) return new StepFailure('loop_guard', `step ${stepId} was visited more than ${MAX_VISITS_PER_STEP} times`);
    return undefined;
  }

  /** Takes a reply for a wait (its `match` holds): the reply branch, and the reply is what `message` reads from now on. */
  async function takeForWait(trx: Trx, change: RunChange, step: StepOf<'wait_for_reply'>, reply: Record<string, unknown>, context: ExpressionContext) {
    const outcome = takeReply(step, reply, context);
    if (!outcome.taken) {
      change.note('wait.reply_ignored', step.id, { message_id: reply.id, ...(outcome.error ? { error: outcome.error } : {}) });
      return false;
    }
    setVariables(change, outcome.variables);
    change.set({ last_message: JSON.stringify(reply), early_reply: null });
    change.note('wait.replied', step.id, { message_id: reply.id });
    await queue.cancel(trx, runStepKey(change.row.id, change.row.seq));
    await advance(trx, change, afterWait(step, 'replied'));
    return true;
  }

  /** Executes the current step of a run that is running (or queued: its first step). */
  async function executeStep(row0: RunsTable, seq: number, attempt: Attempt): Promise<void> {
    const definition = await definitionOf(db, row0);
    const step = stepOf(definition, row0.current_step_id!);
    const context = await contextOf(db, row0, step !== undefined && evaluatesExpressions(step, row0.early_reply !== null));
    let plan: StepPlan | undefined;
    let failure: StepFailure | undefined;
    let prepared: Awaited<ReturnType<typeof prepareSend>> | undefined;
    let skipTo: string | null | undefined;
    try {
      if (!step) throw new StepFailure('invalid_state', `step ${row0.current_step_id} does not exist in version ${row0.version}`);
      plan = frozenActionOf(row0, step.id) ?? planStep(step, context, clock.now(), definition);
      if (plan.kind === 'act' && plan.effect.type === 'send') {
        try {
          prepared = await prepareSend(row0, plan.effect, context);
        } catch (error) {
          const windowClosed = error instanceof AppError && error.code === 'window_closed';
          if (!windowClosed || plan.effect.onWindowClosed === 'fail') throw error;
          skipTo = plan.effect.onWindowClosed === 'skip' ? plan.next : plan.effect.onWindowClosed;
        }
      }
    } catch (error) {
      failure = failureOf(error);
    }

    const pending = await db.transaction().execute(async (trx): Promise<PendingHttp | void> => {
      const row = await store.lockById(trx, row0.id);
      if (!row || row.seq !== seq || (row.status !== 'running' && row.status !== 'queued')) return;
      causes.set(trx, { automationId: row.automation_id, depth: row.depth });
      const change = new RunChange(row, clock.now());
      // A request already sent once (a retry, or a worker lost after the call) is sent again, neither counted nor started twice.
      if (plan?.kind === 'http' && (await http.begun(trx, row))) return http.record(trx, change, plan, attempt);
      if (row.status === 'queued') {
        change.set({ status: 'running', started_at: clock.now().toISOString() });
        change.note('run.started', null);
        await emitRun(trx, 'automation.run_started', change.row);
      }
      const stepId = row.current_step_id;
      const uncounted = { steps_executed: change.row.steps_executed, visits: change.row.visits };
      const tripped = countStep(change);
      if (tripped) return fail(trx, change, tripped.code, tripped.message);
      // A step with an error branch takes it for any failure of its own: an expression as much as a refused send.
      const onError = step?.type === 'http_request' ? (step.branches?.error ?? null) : step && 'on_error' in step ? (step.on_error ?? null) : null;
      if (failure || !plan) return failStep(trx, change, failure ?? new StepFailure('invalid_state', 'the step has no plan'), onError);
      change.note('step.started', stepId, { type: step!.type });
      try {
        return await carryOut(trx, change, step!, plan, { prepared, skipTo, context, uncounted, attempt });
      } catch (error) {
        await failStep(trx, change, failureOf(error), onError);
      }
    });
    // After the commit that recorded it: the call never happens inside a transaction.
    if (pending) await http.complete(pending, attempt);
  }

  async function carryOut(
    trx: Trx,
    change: RunChange,
    step: Step,
    plan: StepPlan,
    done: {
      prepared: Awaited<ReturnType<typeof prepareSend>> | undefined;
      skipTo: string | null | undefined;
      context: ExpressionContext;
      /** The guards' counts before this step: a paused step did not run, and runs again from the start. */
      uncounted: Pick<RunsTable, 'steps_executed' | 'visits'>;
      attempt: Attempt;
    },
  ): Promise<PendingHttp | void> {
    const { prepared, skipTo, context } = done;
    switch (plan.kind) {
      case 'advance':
        if (plan.variables) setVariables(change, plan.variables);
        change.note('step.completed', step.id, plan.detail ?? {});
        return advance(trx, change, plan.next);
      case 'act': {
        const standingNow = await standing(trx, change.row);
        if (!standingNow.free) {
          change.set(done.uncounted);
          return pause(trx, change, standingNow.why);
        }
        if (skipTo !== undefined) {
          change.note('step.skipped', step.id, { reason: 'window_closed' });
          return advance(trx, change, skipTo);
        }
        await perform(trx, change, plan.effect, prepared);
        if (plan.effect.type === 'handoff') return finish(trx, change, 'completed', { outcome: 'handed_off' });
        change.note('step.completed', step.id);
        return advance(trx, change, plan.next);
      }
      case 'wait_for_reply': {
        const waitStep = step as StepOf<'wait_for_reply'>;
        // A reply that came while the run was busy before this wait is never missed.
        const early = change.row.early_reply === null ? null : (JSON.parse(change.row.early_reply) as Record<string, unknown>);
        change.set({ early_reply: null, step_started_at: clock.now().toISOString() });
        if (early && (await takeForWait(trx, change, waitStep, early, context))) return;
        return wait(trx, change, { type: 'reply', until: plan.until.toISOString(), approval_id: null });
      }
      case 'delay':
        return wait(trx, change, { type: 'delay', until: plan.until.toISOString(), approval_id: null });
      case 'end':
        return finish(trx, change, 'completed', { outcome: plan.outcome, reason: plan.reason });
      case 'request_approval': {
        // No wake-up job: the approval's expiry (or a decision) moves the run, at this `seq`.
        const seq = change.bump();
        const approval = await approvals.open(
          trx,
          approvalRequest(change.row, step as StepOf<'request_approval'>, plan, seq, await definitionOf(trx, change.row)),
        );
        const waitingFor: WaitingFor = { type: 'approval', until: approval.expires_at, approval_id: approval.id };
        change.set({ status: 'waiting', waiting_for: JSON.stringify(waitingFor) });
        change.note('wait.approval', step.id, { until: approval.expires_at, approval_id: approval.id });
        return change.save(trx, store);
      }
      case 'http': {
        const standingNow = await standing(trx, change.row);
        if (!standingNow.free) {
          change.set(done.uncounted);
          return pause(trx, change, standingNow.why);
        }
        return http.record(trx, change, plan, done.attempt);
      }
      case 'unavailable':
        throw new StepFailure('invalid_state', plan.message);
    }
  }

  /**
   * What approvals call in a decision's transaction (approval-runs.ts): the run's row is held first,
   * then a run still waiting at the approval's `seq` goes on: to the action step with its frozen plan
   * (approved), or to the step's branch (rejected, expired; none: the run completes).
   */
  const forApprovals: RunsForApprovals = {
    async hold(trx, runId) {
      await store.lockById(trx, runId);
    },
    async decided(trx, decision) {
      const row = await store.lockById(trx, decision.runId);
      if (!row || row.status !== 'waiting' || row.seq !== decision.runSeq) return;
      const step = stepOf(await definitionOf(trx, row), decision.stepId);
      if (step?.type !== 'request_approval') return;
      causes.set(trx, { automationId: row.automation_id, depth: row.depth });
      const change = new RunChange(row, clock.now());
      change.note(`approval.${decision.status}`, step.id, { approval_id: decision.approvalId });
      if (decision.status === 'approved') change.set({ approved_action: JSON.stringify(decision.plan) });
      await advance(trx, change, afterApproval(step, decision.status));
    },
  };

  /** A waiting run's deadline came: a wait for a reply times out, a delay is over. */
  async function wake(row0: RunsTable, seq: number): Promise<void> {
    const definition = await definitionOf(db, row0);
    await db.transaction().execute(async (trx) => {
      const row = await store.lockById(trx, row0.id);
      if (!row || row.seq !== seq || row.status !== 'waiting') return;
      causes.set(trx, { automationId: row.automation_id, depth: row.depth });
      const change = new RunChange(row, clock.now());
      const waitingFor = JSON.parse(row.waiting_for!) as WaitingFor;
      const step = stepOf(definition, row.current_step_id!);
      if (waitingFor.type === 'reply' && step?.type === 'wait_for_reply') {
        change.note('wait.timed_out', step.id);
        return advance(trx, change, afterWait(step, 'timeout'));
      }
      change.note('wait.over', row.current_step_id);
      return advance(trx, change, step && 'next' in step ? (step.next ?? null) : null);
    });
  }

  return {
    forApprovals,
    definitionOf,
    contextOf,
    finish,
    advance,
    takeForWait,

    /** The `run.step` job. */
    async runStep(runId: string, seq: number, attempt: Attempt = { attempt: 1, maxAttempts: 1 }): Promise<void> {
      const row = await store.findById(db, runId);
      if (!row || row.seq !== seq || isFinal(row.status) || row.status === 'paused') return;
      if (row.status === 'waiting') return wake(row, seq);
      return executeStep(row, seq, attempt);
    },

    /** The `run.timeout` job: a run still active at its `timeout_at` ends; one paused for want of control is canceled. */
    async timeOut(runId: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const row = await store.lockById(trx, runId);
        if (!row || isFinal(row.status)) return;
        if (Date.parse(row.timeout_at) > clock.now().getTime()) return;
        causes.set(trx, { automationId: row.automation_id, depth: row.depth });
        const change = new RunChange(row, clock.now());
        if (row.status === 'paused') return finish(trx, change, 'canceled', { outcome: 'control_not_returned' });
        await finish(trx, change, 'timed_out', {
          error: { code: 'timed_out', message: `The run did not finish by ${row.timeout_at}.`, step_id: row.current_step_id },
        });
      });
    },

    /** Queues a new run's first step and its time-out, in the transaction that created it. */
    async schedule(trx: Trx, row: RunsTable): Promise<void> {
      await queue.enqueue(trx, runStep, { run_id: row.id, seq: row.seq }, { dedupeKey: runStepKey(row.id, row.seq) });
      await queue.enqueue(trx, runTimeout, { run_id: row.id }, { dedupeKey: runTimeoutKey(row.id), runAt: new Date(row.timeout_at) });
    },

    /** Control came back to `automation`: a paused run starts its step again from the beginning. */
    async resume(trx: Trx, row: RunsTable): Promise<void> {
      const change = new RunChange(row, clock.now());
      change.note('control.returned', row.current_step_id);
      await advance(trx, change, row.current_step_id);
    },

    setCause(trx: Trx, cause: RunCause): void {
      causes.set(trx, cause);
    },
  };
}

export type RunEngine = ReturnType<typeof createRunEngine>;
