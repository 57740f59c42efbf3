/**
 * The rules of a definition that its schema cannot say: the step graph (ids unique, every reference
 * a step, every step reachable, the static loop guard), which fields go together, and every CEL
 * expression and text hole. Pure and synchronous: what needs the store (templates approved, connector
 * accounts active) is the service's.
 */
import { ACTION_STEP_TYPES, MAX_DEFINITION_BYTES, WAITING_STEP_TYPES, type Definition, type Step, type TriggerType } from '../definition.schemas.ts';
import { checkCondition, checkExpression, checkExpressionType, checkText } from './expressions.ts';
import { checkInputSchema } from './input-schema.ts';

/** One thing wrong with a definition: where (a JSON pointer into the request body), and what. */
export interface DefinitionProblem {
  pointer: string;
  message: string;
}

const FILTERED_TRIGGERS: readonly TriggerType[] = ['message_received', 'conversation_created', 'event'];
const WAITING_GUARD = `${WAITING_STEP_TYPES.slice(0, -1).join(', ')} or ${WAITING_STEP_TYPES.at(-1)}`;
/** `on_window_closed` values that are not step ids. */
const WINDOW_CLOSED_ACTIONS = ['fail', 'skip'];

function escapeToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** A step's references to other steps: where each is written, relative to the step, and the id. */
function stepReferences(step: Step): { path: string; id: string }[] {
  const references: { path: string; id: string | undefined }[] = [];
  if ('next' in step) references.push({ path: '/next', id: step.next });
  if ('on_error' in step) references.push({ path: '/on_error', id: step.on_error });
  switch (step.type) {
    case 'send_message':
      if (step.on_window_closed !== undefined && !WINDOW_CLOSED_ACTIONS.includes(step.on_window_closed)) {
        references.push({ path: '/on_window_closed', id: step.on_window_closed });
      }
      break;
    case 'condition':
      step.branches.forEach((branch, index) => references.push({ path: `/branches/${index}/next`, id: branch.next }));
      references.push({ path: '/default', id: step.default });
      break;
    case 'request_approval':
      references.push({ path: '/action_step', id: step.action_step });
      break;
  }
  if ((step.type === 'wait_for_reply' || step.type === 'http_request' || step.type === 'request_approval') && step.branches) {
    for (const [outcome, id] of Object.entries(step.branches)) references.push({ path: `/branches/${outcome}`, id });
  }
  return references.filter((reference): reference is { path: string; id: string } => reference.id !== undefined);
}

/**
 * Every problem of a definition that passed its schema, pointers prefixed with `base`
 * (`/definition`): step ids unique, `start` and every `next`/branch a step, every step reachable
 * from `start`, every cycle through a waiting step (the static loop guard), every CEL expression and
 * text hole sound, `event` given exactly for `event` triggers. Empty when it is sound.
 */
export function checkDefinition(definition: Definition, base = '/definition'): DefinitionProblem[] {
  const problems: DefinitionProblem[] = [];
  const report = (pointer: string, message: string) => problems.push({ pointer: base + pointer, message });

  const bytes = Buffer.byteLength(JSON.stringify(definition));
  if (bytes > MAX_DEFINITION_BYTES) report('', `the definition is ${bytes} bytes as JSON; the most is ${MAX_DEFINITION_BYTES}`);

  checkTrigger(definition, report);
  if (definition.input_schema !== undefined) {
    const problem = checkInputSchema(definition.input_schema);
    if (problem) report('/input_schema', problem);
  }

  const indexById = new Map<string, number>();
  definition.steps.forEach((step, index) => {
    const first = indexById.get(step.id);
    if (first === undefined) indexById.set(step.id, index);
    else report(`/steps/${index}/id`, `step id ${step.id} is already used by ${base}/steps/${first}`);
  });
  if (!indexById.has(definition.start)) report('/start', `no step has the id ${definition.start}`);

  definition.steps.forEach((step, index) => {
    const at = `/steps/${index}`;
    for (const reference of stepReferences(step)) {
      if (!indexById.has(reference.id)) report(at + reference.path, `no step has the id ${reference.id}`);
    }
    checkStep(step, (pointer, message) => report(at + pointer, message));
    if (step.type === 'request_approval')
      checkApproval(step, definition.steps[indexById.get(step.action_step) ?? -1], (pointer, message) => report(at + pointer, message));
  });

  checkGraph(definition, indexById, report);
  return inDocumentOrder(problems, definition, base);
}

type Report = (pointer: string, message: string) => void;

function checkTrigger(definition: Definition, report: Report): void {
  const trigger = definition.trigger;
  if (trigger.type === 'event' && trigger.event === undefined) report('/trigger/event', 'is required for an event trigger');
  if (trigger.type !== 'event' && trigger.event !== undefined) report('/trigger/event', `is only for event triggers, not ${trigger.type}`);
  if (trigger.filter !== undefined) {
    if (!FILTERED_TRIGGERS.includes(trigger.type))
      report('/trigger/filter', `a filter is only for ${FILTERED_TRIGGERS.join(', ')} triggers, not ${trigger.type}`);
    else expression(report, '/trigger/filter', checkCondition(trigger.filter));
  }
}

function expression(report: Report, pointer: string, problem: string | undefined): void {
  if (problem) report(pointer, problem);
}

/** The fields that go together, and every expression and text of one step. */
function checkStep(step: Step, report: Report): void {
  switch (step.type) {
    case 'send_message': {
      const contents = [step.text, step.media, step.interactive].filter((content) => content !== undefined).length;
      if (contents !== 1) report('', 'a send_message step needs exactly one of text, media and interactive');
      if (step.text !== undefined) expression(report, '/text', checkText(step.text));
      if (step.media) {
        if ((step.media.media_id === undefined) === (step.media.link === undefined)) report('/media', 'media needs exactly one of media_id and link');
        if (step.media.caption !== undefined) expression(report, '/media/caption', checkText(step.media.caption));
      }
      // The body is the one text of an interactive message a run renders.
      if (step.interactive) expression(report, '/interactive/body/text', checkText(step.interactive.body.text));
      break;
    }
    case 'send_template':
      if (step.parameters) checkTemplateParameters(step.parameters, '/parameters', report);
      break;
    case 'wait_for_reply':
      if (step.match !== undefined) expression(report, '/match', checkCondition(step.match));
      break;
    case 'condition':
      step.branches.forEach((branch, index) => expression(report, `/branches/${index}/when`, checkCondition(branch.when)));
      break;
    case 'set_variable':
      expression(report, '/value', checkExpression(step.value));
      break;
    case 'handoff':
      if (step.note !== undefined) expression(report, '/note', checkText(step.note));
      break;
    case 'http_request':
      expression(report, '/path', checkText(step.path));
      for (const [name, value] of Object.entries(step.query ?? {})) expression(report, `/query/${escapeToken(name)}`, checkText(value));
      if (step.body !== undefined) expression(report, '/body', checkExpression(step.body));
      break;
    case 'request_approval':
      expression(report, '/title', checkText(step.title));
      if (step.summary !== undefined) expression(report, '/summary', checkText(step.summary));
      break;
    case 'delay': {
      const forms = [step.seconds, step.until, step.until_local].filter((form) => form !== undefined).length;
      if (forms !== 1) report('', 'a delay step needs exactly one of seconds, until and until_local');
      if (step.until !== undefined) expression(report, '/until', checkExpressionType(step.until, ['google.protobuf.Timestamp', 'string', 'dyn']));
      if (step.until_local && !isTimeZone(step.until_local.timezone)) {
        report('/until_local/timezone', `${step.until_local.timezone} is not an IANA time zone`);
      }
      break;
    }
  }
}

/**
 * An approval gates one step that acts, rendered when it is requested and run as rendered once
 * approved: so `action_step` must act, and an `approved` branch, if written, can only be that step.
 */
function checkApproval(step: Extract<Step, { type: 'request_approval' }>, action: Step | undefined, report: Report): void {
  if (action && !ACTION_STEP_TYPES.includes(action.type)) {
    report('/action_step', `step ${action.id} is a ${action.type} step; an approval gates a step that acts (${ACTION_STEP_TYPES.join(', ')})`);
  }
  if (step.branches?.approved !== undefined && step.branches.approved !== step.action_step) {
    report('/branches/approved', `must be the action_step (${step.action_step}) or left out: an approved run carries out its action step`);
  }
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** Every string value of a template's parameters is text with holes. */
function checkTemplateParameters(value: unknown, pointer: string, report: Report): void {
  if (typeof value === 'string') expression(report, pointer, checkText(value));
  else if (Array.isArray(value)) value.forEach((item, index) => checkTemplateParameters(item, `${pointer}/${index}`, report));
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) checkTemplateParameters(item, `${pointer}/${escapeToken(key)}`, report);
  }
}

/**
 * Reachability from `start`, and the static loop guard: the steps that do not wait must form no
 * cycle among themselves, or a run could spin through them without ever stopping.
 */
function checkGraph(definition: Definition, indexById: Map<string, number>, report: Report): void {
  const steps = definition.steps;
  // Edges by step index, to existing steps only (a missing one is reported as such); duplicates use the first.
  const edges = steps.map((step) =>
    stepReferences(step)
      .map((reference) => indexById.get(reference.id))
      .filter((index): index is number => index !== undefined),
  );

  const start = indexById.get(definition.start);
  if (start !== undefined) {
    const reached = new Set([start]);
    const queue = [start];
    for (let index = queue.shift(); index !== undefined; index = queue.shift()) {
      for (const target of edges[index]!) {
        if (reached.has(target)) continue;
        reached.add(target);
        queue.push(target);
      }
    }
    steps.forEach((step, index) => {
      if (!reached.has(index) && indexById.get(step.id) === index) report(`/steps/${index}`, `step ${step.id} is never reached from start`);
    });
  }

  const waits = (index: number) => WAITING_STEP_TYPES.includes(steps[index]!.type);
  for (const cycle of cyclesWithoutWaiting(steps.length, edges, waits)) {
    const ids = [...cycle, cycle[0]!].map((index) => steps[index]!.id);
    report(`/steps/${cycle[0]}`, `steps ${ids.join(' → ')} form a loop without a step that waits (${WAITING_GUARD}): a run could spin through it`);
  }
}

/**
 * One cycle (step indexes, starting at its first step in document order) per strongly connected
 * component of the graph of non-waiting steps that has one (Tarjan's algorithm).
 */
function cyclesWithoutWaiting(count: number, edges: number[][], waits: (index: number) => boolean): number[][] {
  const successors = (index: number) => (waits(index) ? [] : edges[index]!.filter((target) => !waits(target)));
  const order = new Array<number>(count).fill(-1);
  const low = new Array<number>(count).fill(0);
  const onStack = new Array<boolean>(count).fill(false);
  const stack: number[] = [];
  const components: number[][] = [];
  let counter = 0;

  const connect = (root: number) => {
    // Iterative, so that a long chain of steps cannot overflow the call stack.
    const frames: { node: number; next: number }[] = [{ node: root, next: 0 }];
    order[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = true;
    while (frames.length > 0) {
      const frame = frames.at(-1)!;
      const targets = successors(frame.node);
      if (frame.next < targets.length) {
        const target = targets[frame.next++]!;
        if (order[target] === -1) {
          order[target] = low[target] = counter++;
          stack.push(target);
          onStack[target] = true;
          frames.push({ node: target, next: 0 });
        } else if (onStack[target]) low[frame.node] = Math.min(low[frame.node]!, order[target]!);
        continue;
      }
      frames.pop();
      const parent = frames.at(-1);
      if (parent) low[parent.node] = Math.min(low[parent.node]!, low[frame.node]!);
      if (low[frame.node] === order[frame.node]) {
        const component: number[] = [];
        let member: number;
        do {
          member = stack.pop()!;
          onStack[member] = false;
          component.push(member);
        } while (member !== frame.node);
        components.push(component);
      }
    }
  };
  for (let index = 0; index < count; index++) if (!waits(index) && order[index] === -1) connect(index);

  const cycles: number[][] = [];
  for (const component of components) {
    const members = new Set(component);
    const first = Math.min(...component);
    if (component.length === 1 && !successors(first).includes(first)) continue;
    cycles.push(cycleThrough(first, (index) => successors(index).filter((target) => members.has(target))));
  }
  return cycles.sort((a, b) => a[0]! - b[0]!);
}

/** A shortest cycle from `first` back to itself, inside its component (breadth-first). */
function cycleThrough(first: number, successors: (index: number) => number[]): number[] {
  const previous = new Map<number, number>();
  const queue = [first];
  for (let index = queue.shift(); index !== undefined; index = queue.shift()) {
    for (const target of successors(index)) {
      if (target === first) {
        const cycle = [index];
        while (cycle[0] !== first) cycle.unshift(previous.get(cycle[0]!)!);
        return cycle;
      }
      if (previous.has(target)) continue;
      previous.set(target, index);
      queue.push(target);
    }
  }
  return [first];
}

/**
 * Problems sorted by where their pointer is in the definition (a depth-first walk of its keys as
 * written); a pointer to a field that is absent ranks with its nearest present parent.
 */
function inDocumentOrder(problems: DefinitionProblem[], definition: Definition, base: string): DefinitionProblem[] {
  const rank = new Map<string, number>();
  const walk = (value: unknown, pointer: string) => {
    rank.set(pointer, rank.size);
    if (Array.isArray(value)) value.forEach((item, index) => walk(item, `${pointer}/${index}`));
    else if (value !== null && typeof value === 'object') for (const [key, item] of Object.entries(value)) walk(item, `${pointer}/${escapeToken(key)}`);
  };
  walk(definition, base);
  const rankOf = (pointer: string): number => {
    for (let prefix = pointer; ; prefix = prefix.slice(0, prefix.lastIndexOf('/'))) {
      const found = rank.get(prefix);
      if (found !== undefined) return found;
      if (!prefix.includes('/')) return -1;
    }
  };
  return problems
    .map((problem, index) => ({ problem, index, rank: rankOf(problem.pointer) }))
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .map((entry) => entry.problem);
}

/** The templates a definition sends, with the pointer of each send_template step. */
export function templatesUsed(definition: Definition, base = '/definition'): { pointer: string; name: string; language: string }[] {
  return definition.steps.flatMap((step, index) =>
    step.type === 'send_template' ? [{ pointer: `${base}/steps/${index}`, name: step.template, language: step.language }] : [],
  );
}
