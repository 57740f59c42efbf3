/**
 * What each step does, decided without touching anything: given the step and what expressions can
 * read, a plan (advance, act, wait, end). The live engine (run-engine.ts) carries a plan out in the
 * step's transaction; a dry run (dry-run.ts) records it on a virtual clock. One vocabulary, two
 * executors, so a dry run walks exactly the path a live run would.
 */
import { Cron } from 'croner';
import type { Definition, Step, StepOf } from '../automations/definition.schemas.ts';
import { evaluateCondition, evaluateExpression, ExpressionError, renderText, type ExpressionContext } from '../automations/definition/expressions.ts';
import type { SendMessageInput } from '../messages/messages.schemas.ts';
import type { TemplateParameters } from '../templates/templates.schemas.ts';

/** The content of a send, without its sender and recipient (the run's). */
export type RunSendContent = Omit<SendMessageInput, 'connection_id' | 'contact_id' | 'to' | 'metadata'>;

export type Effect =
  | { type: 'send'; content: RunSendContent; onWindowClosed: string }
  | { type: 'tags'; add: string[]; remove: string[] }
  | { type: 'assign'; memberId: string | null }
  | { type: 'handoff'; assignTo: string | null; note: string | null };

export type StepPlan =
  /** No side effect: go to `next` (null: the run is done). */
  | { kind: 'advance'; next: string | null; variables?: Record<string, unknown>; detail?: Record<string, unknown> }
  /** A side effect, then `next`; a failure of the effect goes to `onError` when there is one. */
  | { kind: 'act'; effect: Effect; next: string | null; onError: string | null }
  | { kind: 'wait_for_reply'; until: Date }
  | { kind: 'delay'; until: Date; next: string | null }
  | { kind: 'end'; outcome: string; reason: string | null }
  /** Ask people first: the action step's plan, rendered now, is what an approval carries out (never a re-render). */
  | { kind: 'request_approval'; title: string; summary: string | null; actionStepId: string; action: StepPlan; until: Date }
  /** A request through a connector account (http-step.ts), rendered; its answer picks `ok` or `error`. */
  | { kind: 'http'; request: HttpStepRequest; ok: string | null; error: string | null; saveAs: string | null }
  /** A step type this release refuses at deploy: a run can reach one only through a version deployed before. */
  | { kind: 'unavailable'; message: string };

/** An `http_request` step rendered: its holes filled and its body evaluated, credentials not yet added (they never meet CEL). */
export interface HttpStepRequest {
  accountId: string;
  method: string;
  path: string;
  query: Record<string, string>;
  /** JSON text, or undefined for no body. */
  body: string | undefined;
  timeoutMs: number;
}

export const DEFAULT_HTTP_TIMEOUT_MS = 10_000;

/** The maximum size of the variables of a run, as JSON. */
export const MAX_VARIABLES_BYTES = 64 * 1024;

export function stepOf(definition: Definition, id: string): Step | undefined {
  return definition.steps.find((step) => step.id === id);
}

function render(text: string | undefined, context: ExpressionContext): string | undefined {
  return text === undefined ? undefined : renderText(text, context);
}

/** Renders every string of a template's parameters (each may carry `{{ }}` holes). */
function renderParameters(value: unknown, context: ExpressionContext): unknown {
  if (typeof value === 'string') return renderText(value, context);
  if (Array.isArray(value)) return value.map((item) => renderParameters(item, context));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renderParameters(item, context)]));
  }
  return value;
}

function sendContent(step: StepOf<'send_message'>, context: ExpressionContext): RunSendContent {
  if (step.text !== undefined) return { type: 'text', text: { body: renderText(step.text, context) } };
  if (step.media !== undefined) {
    const { type, caption, ...source } = step.media;
    const rendered = render(caption, context);
    return { type, [type]: { ...source, ...(rendered === undefined ? {} : { caption: rendered }) } };
  }
  const interactive = step.interactive!;
  return { type: 'interactive', interactive: { ...interactive, body: { text: renderText(interactive.body.text, context) } } };
}

/** The next time `HH:MM` comes round in a time zone, strictly after `now`. */
export function nextLocalTime(time: string, timeZone: string, now: Date): Date {
  const [hours, minutes] = time.split(':');
  const next = new Cron(`${Number(minutes)} ${Number(hours)} * * *`, { timezone: timeZone, paused: true }).nextRun(now);
  if (!next) throw new Error(`no next ${time} in ${timeZone}`);
  return next;
}

function delayUntil(step: StepOf<'delay'>, context: ExpressionContext, now: Date): Date {
  if (step.seconds !== undefined) return new Date(now.getTime() + step.seconds * 1000);
  if (step.until_local !== undefined) return nextLocalTime(step.until_local.time, step.until_local.timezone, now);
  const value = evaluateExpression(step.until!, context);
  const at = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) throw new TypeError(`delay until must be a timestamp; the expression gave ${JSON.stringify(value)}`);
  return new Date(at);
}

/** An approval's default lifetime (`expires_in_seconds`). */
export const DEFAULT_APPROVAL_SECONDS = 24 * 3600;

/** Plans a `request_approval` step: its texts, its deadline, and its action step's plan frozen as of now. */
function planApproval(step: StepOf<'request_approval'>, definition: Definition, context: ExpressionContext, now: Date): StepPlan {
  const actionStep = stepOf(definition, step.action_step);
  if (!actionStep) return { kind: 'unavailable', message: `the action step ${step.action_step} does not exist` };
  const action = planStep(actionStep, context, now, definition);
  if (action.kind === 'unavailable') return action;
  return {
    kind: 'request_approval',
    title: renderText(step.title, context),
    summary: render(step.summary, context) ?? null,
    actionStepId: actionStep.id,
    action,
    until: new Date(now.getTime() + (step.expires_in_seconds ?? DEFAULT_APPROVAL_SECONDS) * 1000),
  };
}

/** What an approval shows of the action it would run: the step, and its rendered content or change. */
export function describeAction(step: Step, plan: StepPlan): Record<string, unknown> {
  if (plan.kind !== 'act') {
    const { kind: _kind, ...rendered } = plan as Record<string, unknown>;
    return { step_id: step.id, type: step.type, ...rendered };
  }
  if (plan.effect.type === 'send') return { step_id: step.id, type: step.type, content: plan.effect.content };
  return { step_id: step.id, type: step.type, ...effectEntry(plan.effect).data };
}

/** Where a run goes once its approval ended: the action step (approved) or the step's branch; null ends the run. */
export function afterApproval(step: StepOf<'request_approval'>, status: 'approved' | 'rejected' | 'expired'): string | null {
  return status === 'approved' ? step.action_step : (step.branches?.[status] ?? null);
}

/** Plans one step. Throws an ExpressionError when an expression or text hole fails. */
export function planStep(step: Step, context: ExpressionContext, now: Date, definition: Definition): StepPlan {
  switch (step.type) {
    case 'send_message':
      return {
        kind: 'act',
        effect: { type: 'send', content: sendContent(step, context), onWindowClosed: step.on_window_closed ?? 'fail' },
        next: step.next ?? null,
        onError: step.on_error ?? null,
      };
    case 'send_template': {
      const parameters = step.parameters === undefined ? {} : (renderParameters(step.parameters, context) as TemplateParameters);
      return {
        kind: 'act',
        effect: {
          type: 'send',
          content: { type: 'template', template: { name: step.template, language: step.language, ...parameters } },
          onWindowClosed: 'fail',
        },
        next: step.next ?? null,
        onError: step.on_error ?? null,
      };
    }
    case 'wait_for_reply':
      return { kind: 'wait_for_reply', until: new Date(now.getTime() + step.timeout_seconds * 1000) };
    case 'condition': {
      for (const [index, branch] of step.branches.entries()) {
        if (evaluateCondition(branch.when, context)) return { kind: 'advance', next: branch.next, detail: { branch: index } };
      }
      return { kind: 'advance', next: step.default ?? null, detail: { branch: 'default' } };
    }
    case 'set_variable':
      return { kind: 'advance', next: step.next ?? null, variables: { [step.name]: evaluateExpression(step.value, context) } };
    case 'set_tags':
      return { kind: 'act', effect: { type: 'tags', add: step.add ?? [], remove: step.remove ?? [] }, next: step.next ?? null, onError: step.on_error ?? null };
    case 'assign':
      return { kind: 'act', effect: { type: 'assign', memberId: step.member_id }, next: step.next ?? null, onError: step.on_error ?? null };
    case 'handoff':
      return {
        kind: 'act',
        effect: { type: 'handoff', assignTo: step.assign_to ?? null, note: render(step.note, context) ?? null },
        next: null,
        onError: null,
      };
    case 'delay': {
      const until = delayUntil(step, context, now);
      return until.getTime() <= now.getTime()
        ? { kind: 'advance', next: step.next ?? null, detail: { until: until.toISOString() } }
        : { kind: 'delay', until, next: step.next ?? null };
    }
    case 'end':
      return { kind: 'end', outcome: step.outcome ?? 'completed', reason: step.reason ?? null };
    case 'http_request':
      return {
        kind: 'http',
        request: {
          accountId: step.connector_account_id,
          method: step.method,
          path: renderText(step.path, context),
          query: Object.fromEntries(Object.entries(step.query ?? {}).map(([name, value]) => [name, renderText(value, context)])),
          body: step.body === undefined ? undefined : JSON.stringify(evaluateExpression(step.body, context)),
          timeoutMs: step.timeout_ms ?? DEFAULT_HTTP_TIMEOUT_MS,
        },
        ok: step.branches?.ok ?? null,
        error: step.branches?.error ?? null,
        saveAs: step.save_as ?? null,
      };
    case 'request_approval':
      return planApproval(step, definition, context, now);
    case 'http_request':
      return { kind: 'unavailable', message: `${step.type} steps are not available yet; deploy a version without them` };
  }
}

/** Whether planning the step evaluates anything (an expression, a text hole): only then does it need the run's contact and conversation. */
export function evaluatesExpressions(step: Step, hasEarlyReply: boolean): boolean {
  switch (step.type) {
    case 'set_tags':
    case 'assign':
    case 'end':
      return false;
    case 'wait_for_reply':
      return hasEarlyReply && step.match !== undefined;
    case 'delay':
      return step.until !== undefined;
    default:
      return true;
  }
}

/** Whether a reply satisfies a wait's `match` (no match expression: any reply), and the variables it sets. */
export function takeReply(
  step: StepOf<'wait_for_reply'>,
  reply: Record<string, unknown>,
  context: ExpressionContext,
): { taken: boolean; variables: Record<string, unknown>; error?: string } {
  const withReply = { ...context, message: reply };
  try {
    if (step.match !== undefined && !evaluateCondition(step.match, withReply)) return { taken: false, variables: {} };
  } catch (error) {
    // A `match` that cannot be evaluated on this reply (a field it lacks) does not match it: the wait goes on.
    if (error instanceof ExpressionError) return { taken: false, variables: {}, error: error.message };
    throw error;
  }
  return { taken: true, variables: step.save_as === undefined ? {} : { [step.save_as]: reply } };
}

/** The event-log entry of a side effect other than a send (whose entry names the message it filed). */
export function effectEntry(effect: Exclude<Effect, { type: 'send' }>): { type: string; data: Record<string, unknown> } {
  switch (effect.type) {
    case 'tags':
      return { type: 'effect.tags_changed', data: { add: effect.add, remove: effect.remove } };
    case 'assign':
      return { type: 'effect.assigned', data: { member_id: effect.memberId } };
    case 'handoff':
      return { type: 'effect.handed_off', data: { assign_to: effect.assignTo, note: effect.note } };
  }
}

/** Where a wait goes next, by how it ended. */
export function afterWait(step: StepOf<'wait_for_reply'>, ending: 'replied' | 'timeout'): string | null {
  return step.branches?.[ending] ?? null;
}
