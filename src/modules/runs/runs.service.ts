import type { ValidateFunction } from 'ajv';
import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { RunsTable } from '../../db/schema.ts';
import type { EventEnvelope } from '../../events/envelope.ts';
import { purgeInBatches, type PurgeOptions, type PurgeResult } from '../../jobs/purge.ts';
import { DAY, type Clock } from '../../lib/clock.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import type { Log } from '../../lib/log.ts';
import type { AutomationsForRuns, DeployedAutomation, InFlightCounts, InFlightRuns } from '../automations/automation-runs.ts';
import type { TriggerType } from '../automations/definition.schemas.ts';
import { evaluateCondition, ExpressionError, type ExpressionContext } from '../automations/definition/expressions.ts';
import { compileInputSchema } from '../automations/definition/input-schema.ts';
import type { AutomationsService } from '../automations/index.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { ContactsService } from '../contacts/index.ts';
import type { Conversation, ConversationsService } from '../conversations/index.ts';
import { connectionScopeOf, type Actor, type Principal } from '../credentials/principal.ts';
import { causeOf, isFinal, MAX_CHAIN_DEPTH, newRunRow, RunChange, runPrincipal, toRun, type NewRun, type RunEngine } from './run-engine.ts';
import { stepOf } from './run-steps.ts';
import type { Run, RunEvent, RunTrigger, TriggerRunInput } from './runs.schemas.ts';
import type { RunFilters, RunsStore } from './runs.store.ts';
import type { DryRuns } from './dry-run.ts';
import type { RunTargets } from './run-target.ts';

export interface RunsServiceDeps {
  db: Db;
  clock: Clock;
  log: Log;
  store: RunsStore;
  engine: RunEngine;
  dryRuns: DryRuns;
  automations: AutomationsForRuns & Pick<AutomationsService, 'get'>;
  connections: Pick<ConnectionsService, 'modeOf' | 'getForReference'>;
  contacts: Pick<ContactsService, 'getForReference' | 'findOrCreateForInbound'>;
  conversations: Pick<ConversationsService, 'lockForRun' | 'changeForRun' | 'openThread' | 'getForReference'>;
}

/** Where a run acts: its number, customer and thread (any may be absent for an event that names none). */
interface RunTarget {
  connectionId: string | null;
  contactId: string | null;
  conversationId: string | null;
}

type StartResult = { started: RunsTable } | { refused: 'control'; control: string } | { refused: 'busy' };

const objectOf = (event: EventEnvelope) => event.data.object;

/** How long a run's event log is kept (`GET /v1/runs/{id}/events`). */
export const RUN_EVENT_RETENTION_MS = 30 * DAY;

/**
 * Runs: starting them (from the triggers' event subscribers and `POST /v1/runs`), handing replies and
 * control changes to the run they concern, cancelling and settling them when their automation
 * changes, and reading them. The engine (run-engine.ts) executes their steps.
 */
export function createRunsService(deps: RunsServiceDeps) {
  const { db, clock, log, store, engine, dryRuns, automations, connections, contacts, conversations } = deps;
  const inputValidators = new Map<string, ValidateFunction>();

  function inputValidatorOf(automation: DeployedAutomation): ValidateFunction | undefined {
    const schema = automation.definition.input_schema;
    if (schema === undefined) return undefined;
    const key = `${automation.automationId}:${automation.version}`;
    let validate = inputValidators.get(key);
    if (!validate) {
      validate = compileInputSchema(schema);
      if (inputValidators.size >= 1000) inputValidators.delete(inputValidators.keys().next().value!);
      inputValidators.set(key, validate);
    }
    return validate;
  }

  function checkInput(automation: DeployedAutomation, input: Record<string, unknown>, base = ''): void {
    const validate = inputValidatorOf(automation);
    if (!validate || validate(input)) return;
    const error = validate.errors![0]!;
    const param = `${base}/input${error.instancePath}`;
    throw invalidParam(param, `does not match the automation's input_schema: ${error.message ?? 'is invalid'}`);
  }

  /**
   * Starts a run in the caller's transaction. In a conversation, the run takes control: it must be
   * `automation` already, or `api` when the definition claims it (`claim_control: if_api`, the
   * default); a run never takes it from an agent or the app. One active run per conversation and one
   * run per trigger are the unique indexes' to enforce: a second start is refused, writing nothing.
   */
  async function start(trx: Trx, request: NewRun): Promise<StartResult> {
    const { automation, target } = request;
    let claim = false;
    if (target.conversationId !== null) {
      const conversation = await conversations.lockForRun(trx, target.conversationId);
      if (!conversation) return { refused: 'control', control: 'none' };
      const claimable = conversation.control === 'api' && automation.definition.claim_control !== 'never';
      if (conversation.control !== 'automation' && !claimable) return { refused: 'control', control: conversation.control };
      claim = conversation.control === 'api';
    }
    const now = clock.now();
    const row = newRunRow(request, now);
    if (!(await store.insert(trx, row))) return { refused: 'busy' };
    if (claim) await conversations.changeForRun(trx, target.conversationId!, { control: 'automation' });
    const change = new RunChange(row, now);
    change.note('run.created', null, { trigger: request.trigger, ...(claim ? { claimed_control: true } : {}) });
    await change.save(trx, store);
    await engine.schedule(trx, change.row);
    return { started: change.row };
  }

  /** Whether an automation may run on a connection: its own, or any of its mode when it names none. */
  async function runsOn(trx: Trx, automation: DeployedAutomation, connectionId: string | null): Promise<boolean> {
    if (automation.connectionId !== null) return automation.connectionId === connectionId;
    if (connectionId === null) return automation.mode === 'live';
    const connection = await connections.modeOf(trx, connectionId);
    return connection !== undefined && connection.test === (automation.mode === 'test');
  }

  function passesFilter(automation: DeployedAutomation, context: ExpressionContext): boolean {
    const filter = automation.definition.trigger.filter;
    if (filter === undefined) return true;
    try {
      return evaluateCondition(filter, context);
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      // A filter that cannot be evaluated on this event does not match it; the automation's author sees it in the log.
      log.warn({ automation_id: automation.automationId, version: automation.version, err: error.message }, 'trigger filter failed; no run started');
      return false;
    }
  }

  /**
   * The automations a fact may start, oldest first; the first whose filter holds starts its run, and
   * that run holds the conversation, so two automations matching one message start one run.
   */
  async function startFromTrigger(
    trx: Trx,
    event: EventEnvelope,
    trigger: { type: TriggerType; key: string; run: RunTrigger },
    target: RunTarget,
    lastMessage: Record<string, unknown> | null,
  ): Promise<void> {
    const candidates = await automations.deployedForTrigger(trx, event.organization_id, {
      type: trigger.type,
      ...(trigger.type === 'event' ? { event: event.type } : {}),
    });
    if (candidates.length === 0) return;
    const cause = causeOf(trx) ?? (await causeFromObject(trx, objectOf(event)));
    const depth = cause ? cause.depth + 1 : 0;
    if (depth > MAX_CHAIN_DEPTH) {
      log.warn({ event_id: event.id, depth }, 'automation chain stopped at its maximum depth');
      return;
    }
    let context: ExpressionContext | undefined;
    for (const automation of candidates) {
      // A run never starts its own automation again (not through its own events, not through its runs').
      if (cause?.automationId === automation.automationId || objectOf(event).automation_id === automation.automationId) continue;
      if (!(await runsOn(trx, automation, target.connectionId))) continue;
      context ??= await triggerContext(trx, event, trigger.run, target, lastMessage);
      if (!passesFilter(automation, context)) continue;
      const result = await start(trx, {
        automation,
        trigger: trigger.run,
        triggerKey: trigger.key,
        target,
        input: {},
        depth,
        lastMessage,
      });
      if ('started' in result || target.conversationId !== null) return;
    }
  }

  /** The run behind an automated message's later events (`message.sent`, `message.status`): its metadata names it. */
  async function causeFromObject(trx: Trx, object: Record<string, unknown>): Promise<{ automationId: string; depth: number } | undefined> {
    const metadata = object.metadata as Record<string, unknown> | undefined;
    const runId = typeof metadata?.run_id === 'string' ? metadata.run_id : object.object === 'run' ? (object.id as string) : undefined;
    if (runId === undefined) return undefined;
    const row = await store.findById(trx, runId);
    return row && { automationId: row.automation_id, depth: row.depth };
  }

  /** What a trigger's filter reads: what the run's steps would read, and the event itself under `trigger.event`. */
  async function triggerContext(
    trx: Trx,
    event: EventEnvelope,
    trigger: RunTrigger,
    target: RunTarget,
    message: Record<string, unknown> | null,
  ): Promise<ExpressionContext> {
    const principal = runPrincipal({ id: event.id, organization_id: event.organization_id });
    const contact = target.contactId ? await contacts.getForReference(trx, principal, target.contactId, '/contact_id').catch(() => null) : null;
    const conversation = target.conversationId ? await conversations.getForReference(trx, principal, target.conversationId).catch(() => null) : null;
    return {
      input: {},
      vars: {},
      trigger: { ...trigger, event: { id: event.id, type: event.type, object: objectOf(event) } },
      message,
      contact: contact as Record<string, unknown> | null,
      conversation: conversation as Record<string, unknown> | null,
      run: {},
      now: clock.now().toISOString(),
    };
  }

  /**
   * A customer's message goes to the run active in its conversation: a run waiting for a reply takes
   * it (when its `match` holds), a run busy before its wait or in a delay keeps it for its next wait;
   * a paused run lets it pass (whoever has the conversation reads it). Answers whether a run had the
   * conversation.
   */
  async function deliverReply(trx: Trx, message: Record<string, unknown>): Promise<boolean> {
    const conversationId = message.conversation_id as string;
    const row = await store.lockActiveInConversation(trx, conversationId);
    if (!row) return false;
    const change = new RunChange(row, clock.now());
    const waitingFor = row.waiting_for === null ? null : (JSON.parse(row.waiting_for) as { type: string });
    if (row.status === 'paused') return true;
    if (row.status !== 'waiting' || waitingFor?.type !== 'reply') {
      // Busy before its wait (or in a delay): the next wait takes it.
      change.set({ early_reply: JSON.stringify(message) });
      change.note('wait.reply_kept', row.current_step_id, { message_id: message.id });
      await change.save(trx, store);
      return true;
    }
    const conversation = await conversations.lockForRun(trx, conversationId);
    if (conversation?.control !== 'automation') return true;
    const step = stepOf(await engine.definitionOf(trx, row), row.current_step_id!);
    if (step?.type !== 'wait_for_reply') return true;
    engine.setCause(trx, { automationId: row.automation_id, depth: row.depth });
    if (!(await engine.takeForWait(trx, change, step, message, await engine.contextOf(trx, row)))) await change.save(trx, store);
    return true;
  }

  async function resumePaused(trx: Trx, conversationId: string): Promise<void> {
    const row = await store.lockActiveInConversation(trx, conversationId);
    if (row?.status === 'paused') await engine.resume(trx, row);
  }

  /** The run of a caller's organization that the caller may see; another's is not found. */
  async function visibleRun(executor: Db, principal: Principal, id: string, param?: string): Promise<RunsTable> {
    const row = await store.find(executor, connectionScopeOf(principal), id);
    if (!row) throw param ? new AppError('resource_not_found', `No such run: ${id}.`, { param }) : notFound('run');
    return row;
  }

  /** The automation (and version) a caller may run: another organization's, or one its key's mode or connection cannot see, is not found. */
  async function runnableAutomation(principal: Principal, automationId: string, version: number | undefined, base = '') {
    const automation = await automations.versionForRun(db, principal.organizationId, automationId, version);
    const visible =
      automation !== undefined &&
      (principal.mode === null || principal.mode === automation.mode) &&
      (principal.connectionId === null || principal.connectionId === automation.connectionId);
    if (!visible) {
      // Told apart only once refused: an automation the caller may see, without the version asked for (or any deployed one).
      const seen = await automations.get(principal, automationId).catch(() => undefined);
      if (seen && version !== undefined)
        throw new AppError('resource_not_found', `Automation ${automationId} has no version ${version}.`, { param: `${base}/version` });
      if (seen) throw invalidParam(`${base}/version`, `is required: automation ${automationId} has no deployed version`, 'required');
      throw new AppError('resource_not_found', `No such automation: ${automationId}.`, { param: `${base}/automation_id` });
    }
    return automation;
  }

  /** Resolves `POST /v1/runs`'s target fields to a number, a customer and (for a live run) their thread. */
  async function targetOf(
    principal: Principal,
    automation: DeployedAutomation,
    input: TriggerRunInput,
  ): Promise<{ connectionId: string | null; contactId: string | null; to: string | null; conversation: Conversation | null }> {
    const given = (['conversation_id', 'contact_id', 'to'] as const).filter((field) => input[field] !== undefined);
    if (given.length > 1) throw invalidParam(`/${given[1]}`, `cannot be given with ${given[0]}`, 'exclusive');
    if (input.conversation_id !== undefined) {
      if (input.connection_id !== undefined)
        throw invalidParam('/connection_id', 'cannot be given with conversation_id (the conversation has its number)', 'exclusive');
      const conversation = await conversations.getForReference(db, principal, input.conversation_id, '/conversation_id');
      if (automation.connectionId !== null && conversation.connection_id !== automation.connectionId) {
        throw invalidParam('/conversation_id', `is on another number than the automation's (${automation.connectionId})`);
      }
      return { connectionId: conversation.connection_id, contactId: conversation.contact_id, to: null, conversation };
    }
    const connectionId = automation.connectionId ?? input.connection_id ?? principal.connectionId;
    if (connectionId === null && given.length > 0)
      throw invalidParam('/connection_id', 'is required: the automation runs on every number of its mode', 'required');
    if (connectionId !== null) {
      if (automation.connectionId !== null && input.connection_id !== undefined && input.connection_id !== automation.connectionId) {
        throw invalidParam('/connection_id', `must be the automation's own (${automation.connectionId})`);
      }
      const connection = await connections.getForReference(db, principal, connectionId, '/connection_id');
      if (connection.test !== (automation.mode === 'test'))
        throw invalidParam('/connection_id', `is a ${connection.test ? 'test' : 'live'} number; the automation runs on ${automation.mode} ones`);
    }
    if (input.contact_id !== undefined) {
      const contact = await contacts.getForReference(db, principal, input.contact_id, '/contact_id');
      return { connectionId, contactId: contact.id, to: null, conversation: null };
    }
    return { connectionId, contactId: null, to: input.to ?? null, conversation: null };
  }

  const inFlight: InFlightRuns = {
    async settle(trx, input): Promise<InFlightCounts> {
      const counts = { kept: 0, canceled: 0, migrated: 0 };
      for (const row of await store.lockActiveOfAutomation(trx, input.automationId)) {
        if (row.dry_run === 1) continue;
        const change = new RunChange(row, clock.now());
        if (input.policy === 'cancel') {
          engine.setCause(trx, { automationId: row.automation_id, depth: row.depth });
          await engine.finish(trx, change, 'canceled', { outcome: `canceled_by_${input.cause}` });
          counts.canceled += 1;
          continue;
        }
        const step = input.definition && row.current_step_id ? stepOf(input.definition, row.current_step_id) : undefined;
        const oldStep = row.current_step_id ? stepOf(await engine.definitionOf(trx, row), row.current_step_id) : undefined;
        const movable =
          input.policy === 'migrate' && (row.status === 'waiting' || row.status === 'paused') && step !== undefined && step.type === oldStep?.type;
        if (!movable || input.toVersion === null) {
          counts.kept += 1;
          continue;
        }
        change.set({ version: input.toVersion });
        change.note('run.migrated', row.current_step_id, { from_version: row.version, to_version: input.toVersion });
        await change.save(trx, store);
        counts.migrated += 1;
      }
      return counts;
    },
    versionsInUse: (executor, automationId) => store.versionsInUse(executor, automationId),
    countActive: (executor, organizationId, automationId) => store.countActiveOfAutomation(executor, organizationId, automationId),
  };

  const scheduleTargets: RunTargets = {
    async checkTarget(principal, target, param) {
      const automation = await runnableAutomation(principal, target.automation_id, undefined, param);
      checkInput(automation, target.input, param);
      if (target.conversation_id === undefined) return { target, connectionId: automation.connectionId };
      const conversation = await conversations.getForReference(db, principal, target.conversation_id, `${param}/conversation_id`);
      if (automation.connectionId !== null && conversation.connection_id !== automation.connectionId) {
        throw invalidParam(`${param}/conversation_id`, `is on another number than the automation's (${automation.connectionId})`);
      }
      return { target, connectionId: conversation.connection_id };
    },

    async createForOccurrence(trx, input) {
      const { target } = input;
      const automation = await automations.versionForRun(trx, input.organizationId, target.automation_id);
      if (!automation)
        throw new AppError('resource_not_found', `Automation ${target.automation_id} no longer exists or has no deployed version.`, {
          param: '/target/automation_id',
        });
      if (automation.status !== 'enabled')
        throw new AppError('invalid_state', `Automation ${target.automation_id} is ${automation.status}.`, { param: '/target/automation_id' });
      checkInput(automation, target.input, '/target');
      const triggerKey = `occurrence:${input.occurrenceId}`;
      let runTarget: RunTarget = { connectionId: automation.connectionId, contactId: null, conversationId: null };
      if (target.conversation_id !== undefined) {
        const principal = runPrincipal({ id: input.occurrenceId, organization_id: input.organizationId });
        const conversation = await conversations.getForReference(trx, principal, target.conversation_id, '/target/conversation_id');
        runTarget = { connectionId: conversation.connection_id, contactId: conversation.contact_id, conversationId: conversation.id };
      }
      const result = await start(trx, {
        automation,
        trigger: { type: 'schedule', occurrence_id: input.occurrenceId },
        triggerKey,
        target: runTarget,
        input: target.input,
        depth: 0,
        lastMessage: null,
      });
      if ('started' in result) return { run_id: result.started.id };
      if (result.refused === 'control') {
        throw new AppError('invalid_state', `Conversation ${target.conversation_id} is under ${result.control} control.`, { param: '/target/conversation_id' });
      }
      throw new AppError('invalid_state', `Conversation ${target.conversation_id} already has an active run.`, { param: '/target/conversation_id' });
    },
  };

  return {
    inFlight,
    scheduleTargets,

    /**
     * A contact merge folds conversation `from` into `to`: their runs follow it. A conversation holds
     * one active run, so when both have one, the folded conversation's is canceled first.
     */
    async onConversationFolded(trx: Trx, from: string, to: string): Promise<void> {
      const folded = await store.lockActiveInConversation(trx, from);
      if (folded && (await store.lockActiveInConversation(trx, to))) {
        engine.setCause(trx, { automationId: folded.automation_id, depth: folded.depth });
        await engine.finish(trx, new RunChange(folded, clock.now()), 'canceled', { outcome: 'conversation_merged' });
      }
      await store.moveConversation(trx, from, to);
    },

    /** Deletes event-log entries past their 30 days, in bounded batches (the `run_event.purge` job). */
    purgeEvents(options: PurgeOptions = {}): Promise<PurgeResult> {
      const before = new Date(clock.now().getTime() - RUN_EVENT_RETENTION_MS).toISOString();
      return purgeInBatches((limit) => store.deleteEventsBefore(db, before, limit), options);
    },

    /** `message.received`: the reply of a run in the conversation, or else the start of one. */
    async onMessageReceived(trx: Trx, event: EventEnvelope): Promise<void> {
      const message = objectOf(event);
      if (await deliverReply(trx, message)) return;
      const target = { connectionId: event.connection_id, contactId: message.contact_id as string, conversationId: message.conversation_id as string };
      await startFromTrigger(
        trx,
        event,
        { type: 'message_received', key: `message:${String(message.id)}`, run: { type: 'message_received', message_id: message.id as string } },
        target,
        message,
      );
    },

    /** `conversation.created`: runs of automations that greet a new thread. */
    async onConversationCreated(trx: Trx, event: EventEnvelope): Promise<void> {
      const conversation = objectOf(event);
      const target = { connectionId: event.connection_id, contactId: conversation.contact_id as string, conversationId: conversation.id as string };
      await startFromTrigger(
        trx,
        event,
        { type: 'conversation_created', key: `conversation:${String(conversation.id)}`, run: { type: 'conversation_created' } },
        target,
        null,
      );
    },

    /** Any event: runs of automations triggered by its type, in the thread it names, if it names one. */
    async onEvent(trx: Trx, event: EventEnvelope): Promise<void> {
      const object = objectOf(event);
      const conversationId =
        object.object === 'conversation' ? (object.id as string) : typeof object.conversation_id === 'string' ? object.conversation_id : null;
      const contactId = object.object === 'contact' ? (object.id as string) : typeof object.contact_id === 'string' ? object.contact_id : null;
      const target = { connectionId: event.connection_id, contactId, conversationId };
      const message = object.object === 'message' ? object : null;
      await startFromTrigger(
        trx,
        event,
        { type: 'event', key: `event:${event.id}`, run: { type: 'event', event_id: event.id, event_type: event.type } },
        target,
        message,
      );
    },

    /** `conversation.updated` with control back to `automation`: the paused run there resumes its step. */
    async onConversationUpdated(trx: Trx, event: EventEnvelope): Promise<void> {
      if (event.previous_attributes?.control === undefined || objectOf(event).control !== 'automation') return;
      await resumePaused(trx, objectOf(event).id as string);
    },

    /** `conversation.lock_changed` to anything but held: a run paused by the lock resumes (it pauses again if it still may not act). */
    async onLockChanged(trx: Trx, event: EventEnvelope): Promise<void> {
      const lock = objectOf(event);
      if (lock.status === 'held') return;
      const conversation = await conversations.lockForRun(trx, lock.conversation_id as string);
      if (conversation?.control === 'automation') await resumePaused(trx, conversation.id);
    },

    /**
     * `POST /v1/runs`: a run of an automation, now, for a target; or a dry run, answered with its whole
     * event log. A live run needs the automation enabled.
     */
    async trigger(actor: Actor, input: TriggerRunInput): Promise<Run | (Run & { events: RunEvent[] })> {
      const { principal } = actor;
      const original = input.replay_of === undefined ? undefined : toRun(await visibleRun(db, principal, input.replay_of, '/replay_of'));
      if (original && original.automation_id !== input.automation_id)
        throw invalidParam('/replay_of', `is a run of another automation (${original.automation_id})`);
      const automation = await runnableAutomation(principal, input.automation_id, input.version ?? original?.version);
      const runInput = input.input ?? original?.input ?? {};
      checkInput(automation, runInput);
      if (input.simulate !== undefined && input.dry_run !== true) throw invalidParam('/simulate', 'is for dry runs only (dry_run: true)');
      const replayTarget = original && input.conversation_id === undefined && input.contact_id === undefined && input.to === undefined;
      const target = await targetOf(
        principal,
        automation,
        replayTarget && original.conversation_id ? { ...input, conversation_id: original.conversation_id } : input,
      );
      if (input.dry_run === true) {
        return dryRuns.run({
          automation,
          input: runInput,
          target,
          simulate: input.simulate ?? {},
          replayOf: original?.id ?? null,
          triggeredBy: principal.credentialId,
        });
      }
      if (automation.status !== 'enabled')
        throw new AppError('invalid_state', `Automation ${automation.automationId} is ${automation.status}; enable it to run it (or make a dry run).`, {
          param: '/automation_id',
        });
      if (target.conversation === null && target.contactId === null && target.to === null) {
        throw invalidParam('/conversation_id', 'or contact_id or to is required: a live run acts in a conversation', 'required');
      }
      return db.transaction().execute(async (trx) => {
        const contactId =
          target.contactId ??
          (
            await contacts.findOrCreateForInbound(trx, {
              organizationId: principal.organizationId,
              connectionId: target.connectionId!,
              waId: target.to!.slice(1),
              profileName: undefined,
              at: clock.now(),
            })
          ).id;
        const conversation =
          target.conversation ??
          (await conversations.openThread(trx, { organizationId: principal.organizationId, connectionId: target.connectionId!, contactId }));
        const result = await start(trx, {
          automation,
          trigger: { type: 'api' },
          triggerKey: null,
          target: { connectionId: target.connectionId, contactId, conversationId: conversation.id },
          input: runInput,
          depth: 0,
          lastMessage: null,
          replayOf: original?.id ?? null,
          triggeredBy: principal.credentialId,
          triggeredByMemberId: principal.memberId,
        });
        if ('started' in result) return toRun(result.started);
        if (result.refused === 'control') {
          throw new AppError(
            'invalid_state',
            `Conversation ${conversation.id} is under ${result.control} control; a run takes only one under api or automation control.`,
            { param: '/conversation_id' },
          );
        }
        const active = await store.lockActiveInConversation(trx, conversation.id);
        throw new AppError('invalid_state', `Conversation ${conversation.id} already has an active run${active ? ` (${active.id})` : ''}.`, {
          param: '/conversation_id',
        });
      });
    },

    async get(principal: Principal, id: string): Promise<Run> {
      return toRun(await visibleRun(db, principal, id));
    },

    async list(principal: Principal, filters: RunFilters, page: PageRequest): Promise<Page<Run>> {
      return mapPage(await store.list(db, connectionScopeOf(principal), filters, page), toRun);
    },

    /** The run's event log, in order, from after `afterSeq`. */
    async listEvents(principal: Principal, id: string, afterSeq: number, limit: number): Promise<Page<RunEvent>> {
      await visibleRun(db, principal, id);
      const rows = await store.listEvents(db, id, afterSeq, limit + 1);
      const data = rows.slice(0, limit).map((row): RunEvent => ({
        object: 'run_event',
        seq: row.seq,
        type: row.type,
        step_id: row.step_id,
        at: row.at,
        data: JSON.parse(row.data) as Record<string, unknown>,
      }));
      const hasMore = rows.length > limit;
      return { object: 'list', data, has_more: hasMore, next_cursor: hasMore ? String(data[data.length - 1]!.seq) : null };
    },

    /**
     * Cancels a run: the step executing now finishes (its transaction holds the run), then the run ends
     * `canceled`, its timers stale and the conversation handed back. A finished run cannot be canceled.
     */
    async cancel(actor: Actor, id: string): Promise<Run> {
      return db.transaction().execute(async (trx) => {
        await visibleRun(trx, actor.principal, id);
        const row = (await store.lockById(trx, id))!;
        if (isFinal(row.status)) throw new AppError('invalid_state', `Run ${id} already ended (${row.status}).`);
        const change = new RunChange(row, clock.now());
        engine.setCause(trx, { automationId: row.automation_id, depth: row.depth });
        await engine.finish(trx, change, 'canceled', { outcome: 'canceled' });
        return toRun(change.row);
      });
    },
  };
}

export type RunsService = ReturnType<typeof createRunsService>;
