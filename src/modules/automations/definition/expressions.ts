/**
 * CEL expressions and `{{ CEL }}` text holes: checked when a version is written, evaluated by runs.
 * The library is @marcbachmann/cel-js (docs/automations-expressions.md says why). It has no
 * evaluation cost limit and runs `matches()` on JS RegExp, so this file instruments the one evaluator
 * our environment owns (see `meter`): every node it evaluates is charged to a budget, every value it
 * produces is size-checked, and `matches` runs on RE2 (linear time). Nothing here can reach the
 * runtime: CEL has no eval, no I/O, and no function beyond the ones registered below.
 */
import { Environment, type ASTNode, type ParseResult } from '@marcbachmann/cel-js';
import { RE2JS } from 're2js';

/** What an expression can read. Every value is plain JSON; `now` is an ISO 8601 timestamp. */
export interface ExpressionContext {
  input: Record<string, unknown>;
  vars: Record<string, unknown>;
  trigger: Record<string, unknown>;
  /** The message that triggered the run, or the reply a wait is matching; null when there is none. */
  message: Record<string, unknown> | null;
  contact: Record<string, unknown> | null;
  conversation: Record<string, unknown> | null;
  run: Record<string, unknown>;
  now: string;
}

export type ExpressionFailure = 'syntax' | 'type' | 'cost' | 'size' | 'runtime';

export class ExpressionError extends Error {
  readonly kind: ExpressionFailure;
  constructor(kind: ExpressionFailure, message: string) {
    super(message);
    this.name = 'ExpressionError';
    this.kind = kind;
  }
}

/** Nodes one evaluation (or one text's holes together) may evaluate; a typical filter takes 10 to 50. */
export const MAX_EVALUATION_STEPS = 100_000;
/** The longest string, list or bytes value an evaluation may produce on the way. */
export const MAX_INTERMEDIATE_STRING = 1024 * 1024;
export const MAX_INTERMEDIATE_LIST = 100_000;
/** An expression's value, as JSON (UTF-8 bytes). */
export const MAX_RESULT_BYTES = 64 * 1024;
const COMPILED_CACHE_SIZE = 1000;
const REGEX_CACHE_SIZE = 200;

/** Read by every expression; message, contact and conversation may be null, so they are `dyn`. */
const VARIABLES = {
  input: 'map<string, dyn>',
  vars: 'map<string, dyn>',
  trigger: 'map<string, dyn>',
  run: 'map<string, dyn>',
  message: 'dyn',
  contact: 'dyn',
  conversation: 'dyn',
  now: 'google.protobuf.Timestamp',
} as const;

class LruCache<V> {
  readonly #entries = new Map<string, V>();
  readonly #capacity: number;
  constructor(capacity: number) {
    this.#capacity = capacity;
  }
  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }
  set(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value as string);
  }
}

// ---------------------------------------------------------------------------------------------
// The metered evaluator

/** The budget of the evaluation in progress. Evaluation is synchronous (no async function is registered), so one suffices. */
const meter = { remaining: 0, exhausted: false };

function charge(): void {
  if (--meter.remaining < 0) {
    meter.exhausted = true;
    throw new ExpressionError('cost', `the expression exceeded its evaluation budget (${MAX_EVALUATION_STEPS} steps)`);
  }
}

function checkProducedSize(value: unknown): void {
  if (typeof value === 'string') {
    if (value.length > MAX_INTERMEDIATE_STRING) tooLarge(`a string longer than ${MAX_INTERMEDIATE_STRING} characters`);
  } else if (Array.isArray(value)) {
    if (value.length > MAX_INTERMEDIATE_LIST) tooLarge(`a list longer than ${MAX_INTERMEDIATE_LIST} elements`);
  } else if (value instanceof Uint8Array && value.length > MAX_INTERMEDIATE_STRING) {
    tooLarge(`bytes longer than ${MAX_INTERMEDIATE_STRING}`);
  }
}

function tooLarge(what: string): never {
  meter.exhausted = true;
  throw new ExpressionError('cost', `the expression built ${what}`);
}

const regexes = new LruCache<RE2JS>(REGEX_CACHE_SIZE);

/** CEL's `matches` (a partial match, RE2 syntax) in linear time. */
function linearMatches(text: string, pattern: string): boolean {
  let regex = regexes.get(pattern);
  if (!regex) {
    try {
      regex = RE2JS.compile(pattern);
    } catch (error) {
      throw new ExpressionError('runtime', `invalid regular expression ${JSON.stringify(pattern)}: ${(error as Error).message}`);
    }
    regexes.set(pattern, regex);
  }
  return regex.test(text);
}

/** The parts of the library's evaluator that the meter replaces (version 8.0.0, pinned). */
interface LibraryEvaluator {
  run(ast: ASTNode, ctx: unknown): unknown;
  debugType(value: unknown): unknown;
}

/**
 * Every node but the root is evaluated through `evaluator.run` (operands, call arguments, each macro
 * iteration), and deep equality asks `debugType` once per nested container: charging both bounds the
 * work of any expression, including `||`/`exists` that swallow an operand's error (the meter stays
 * exhausted, and `evaluate` checks it after the library returns). `matches` and `join` are taken over
 * here: the first to run on RE2, the second to refuse a string too long before building it.
 */
function instrument(evaluator: LibraryEvaluator): void {
  const run = evaluator.run.bind(evaluator);
  const debugType = evaluator.debugType.bind(evaluator);
  const meteredRun: LibraryEvaluator['run'] = (ast, ctx) => {
    charge();
    let value: unknown;
    if (ast.op === 'rcall' && ast.args[0] === 'matches' && ast.args[2].length === 1) {
      value = matchesCall(evaluator.run(ast.args[1], ctx), evaluator.run(ast.args[2][0]!, ctx));
    } else if (ast.op === 'rcall' && ast.args[0] === 'join' && ast.args[2].length <= 1) {
      const list = evaluator.run(ast.args[1], ctx);
      const separator = ast.args[2][0] ? evaluator.run(ast.args[2][0], ctx) : '';
      value = joinCall(list, separator);
    } else {
      value = run(ast, ctx);
    }
    checkProducedSize(value);
    return value;
  };
  const meteredDebugType: LibraryEvaluator['debugType'] = (value) => {
    charge();
    return debugType(value);
  };
  evaluator.run = meteredRun;
  evaluator.debugType = meteredDebugType;
}

function matchesCall(text: unknown, pattern: unknown): boolean {
  if (typeof text !== 'string' || typeof pattern !== 'string')
    throw new ExpressionError('runtime', "found no matching overload for 'matches' (string expected)");
  return linearMatches(text, pattern);
}

function joinCall(list: unknown, separator: unknown): string {
  if (!Array.isArray(list) || typeof separator !== 'string') throw new ExpressionError('runtime', "found no matching overload for 'join'");
  let length = separator.length * Math.max(0, list.length - 1);
  for (const item of list) {
    if (typeof item !== 'string') throw new ExpressionError('runtime', 'string.join(): list must contain only strings');
    length += item.length;
  }
  if (length > MAX_INTERMEDIATE_STRING) tooLarge(`a string longer than ${MAX_INTERMEDIATE_STRING} characters`);
  return list.join(separator);
}

function createEnvironment(): Environment {
  const env = new Environment({
    homogeneousAggregateLiterals: false,
    limits: { maxAstNodes: 2000, maxDepth: 64, maxListElements: 256, maxMapEntries: 256, maxCallArguments: 16 },
  });
  for (const [name, type] of Object.entries(VARIABLES)) env.registerVariable(name, type);
  let evaluator: LibraryEvaluator | undefined;
  const adopt = (candidate: LibraryEvaluator) => (evaluator ??= candidate);
  // The spec's global form of `matches`; its first call also hands over the evaluator to instrument.
  env.registerFunction('matches(string, string): bool', function (this: LibraryEvaluator, text: string, pattern: string) {
    adopt(this);
    return linearMatches(text, pattern);
  });
  env.parse('matches("", "")')({ input: {}, vars: {}, trigger: {}, run: {}, message: null, contact: null, conversation: null, now: new Date(0) });
  if (!evaluator || typeof evaluator.run !== 'function' || typeof evaluator.debugType !== 'function') {
    throw new Error('@marcbachmann/cel-js changed: its evaluator cannot be metered (see expressions.ts)');
  }
  instrument(evaluator);
  return env;
}

const env = createEnvironment();
startMeter();
/** The library's classes for durations and unsigned ints are not exported: taken from values. */
const DurationClass = (env.evaluate('duration("1s")') as object).constructor;
const UnsignedIntClass = (env.evaluate('1u') as object).constructor;

// ---------------------------------------------------------------------------------------------
// Compiling

interface Compiled {
  program?: ParseResult;
  /** Why the source is not sound (syntax or type); set when `program` is not. */
  error?: ExpressionError;
  /** The checked type of the value (`bool`, `dyn`, `string`, ...). */
  type?: string;
}

const compiledCache = new LruCache<Compiled>(COMPILED_CACHE_SIZE);

function compile(source: string): Compiled {
  let compiled = compiledCache.get(source);
  if (compiled) return compiled;
  compiled = compileUncached(source);
  compiledCache.set(source, compiled);
  return compiled;
}

/**
 * The library evaluates a program's root node itself, not through the metered `run`: the program
 * that runs wraps the source in `dyn(...)` so that the user's root is a metered operand too. (The
 * newline keeps a trailing `//` comment from swallowing the parenthesis.)
 */
const WRAPPER_OFFSET = 'dyn('.length;

function compileUncached(source: string): Compiled {
  let checked: ParseResult;
  try {
    checked = env.parse(source);
  } catch (error) {
    return { error: new ExpressionError('syntax', describeLibraryError(error, source)) };
  }
  const result = checked.check();
  if (!result.valid) return { error: new ExpressionError(result.error?.name === 'ParseError' ? 'syntax' : 'type', describeLibraryError(result.error, source)) };
  const program = env.parse(`dyn(${source}\n)`);
  program.check();
  return { program, type: result.type ?? 'dyn' };
}

interface LibraryError {
  code?: string;
  summary?: string;
  message?: string;
  range?: { start: number; end: number };
}

/** One line: the library's summary (its message draws the source over several lines), and where. */
function describeLibraryError(error: unknown, source: string, offset = 0): string {
  if (error instanceof ExpressionError) return error.message;
  const libraryError = (error ?? {}) as LibraryError;
  let summary = libraryError.summary ?? libraryError.message ?? String(error);
  const unknown = /^Unknown variable: (.+)$/.exec(summary);
  if (libraryError.code === 'unknown_variable' && unknown) summary = `undeclared reference to '${unknown[1]}'`;
  const start = libraryError.range?.start;
  return start === undefined ? summary : `${summary} (${position(source, Math.max(0, start - offset))})`;
}

function position(source: string, offset: number): string {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return line === 1 ? `at column ${column}` : `at line ${line}, column ${column}`;
}

/** Parses and type-checks an expression against the context's names: undefined when it is sound, else why not. */
export function checkExpression(source: string): string | undefined {
  return compile(source).error?.message;
}

/** As `checkExpression`, and the checked type must be one of `types` (`dyn` is known only when it runs: list it to accept it). */
export function checkExpressionType(source: string, types: readonly string[]): string | undefined {
  const compiled = compile(source);
  if (compiled.error) return compiled.error.message;
  if (!types.includes(compiled.type!))
    return `the expression must be ${types
      .filter((type) => type !== 'dyn')
      .map(typeName)
      .join(' or ')}, not ${typeName(compiled.type!)}`;
  return undefined;
}

/** CEL's own names for the well-known types (`google.protobuf.Timestamp` is written `timestamp`). */
function typeName(type: string): string {
  return type.replaceAll('google.protobuf.Timestamp', 'timestamp').replaceAll('google.protobuf.Duration', 'duration');
}

/** As `checkExpression`, and the value must be a bool (or `dyn`, a bool or not only when it runs). */
export function checkCondition(source: string): string | undefined {
  return checkExpressionType(source, ['bool', 'dyn']);
}

// ---------------------------------------------------------------------------------------------
// Evaluating

/**
 * JSON numbers that are whole (and safe) become CEL ints, the others doubles: `vars.count + 1` works
 * as a user of JSON expects. `now` becomes a timestamp.
 */
function toCel(value: unknown): unknown {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(toCel);
  if (value !== null && typeof value === 'object') {
    const object: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) if (item !== undefined) object[key] = toCel(item);
    return object;
  }
  return value;
}

function bindings(context: ExpressionContext): Record<string, unknown> {
  const now = new Date(context.now);
  if (Number.isNaN(now.getTime())) throw new ExpressionError('runtime', `now is not a timestamp: ${context.now}`);
  return {
    input: toCel(context.input ?? {}),
    vars: toCel(context.vars ?? {}),
    trigger: toCel(context.trigger ?? {}),
    run: toCel(context.run ?? {}),
    message: toCel(context.message ?? null),
    contact: toCel(context.contact ?? null),
    conversation: toCel(context.conversation ?? null),
    now,
  };
}

/** Runs a compiled program under the meter that the caller has set; the raw CEL value. */
function runProgram(source: string, values: Record<string, unknown>): unknown {
  const compiled = compile(source);
  if (!compiled.program) throw compiled.error!;
  let value: unknown;
  try {
    value = compiled.program(values);
  } catch (error) {
    if (meter.exhausted) throw exhaustedError(error);
    if (error instanceof ExpressionError) throw error;
    throw new ExpressionError('runtime', describeLibraryError(error, source, WRAPPER_OFFSET));
  }
  // An operand of `||`, `&&` or a quantifier may have run out and been swallowed by the library.
  if (meter.exhausted) throw exhaustedError(undefined);
  return value;
}

function exhaustedError(error: unknown): ExpressionError {
  return error instanceof ExpressionError && error.kind === 'cost'
    ? error
    : new ExpressionError('cost', `the expression exceeded its evaluation budget (${MAX_EVALUATION_STEPS} steps)`);
}

function startMeter(): void {
  meter.remaining = MAX_EVALUATION_STEPS;
  meter.exhausted = false;
}

/** Evaluates under the cost cap; the value as plain JSON. Throws ExpressionError. */
export function evaluateExpression(source: string, context: ExpressionContext): unknown {
  startMeter();
  return toJson(runProgram(source, bindings(context)), MAX_RESULT_BYTES);
}

/** Evaluates an expression that must be a bool. Throws ExpressionError (`type` when it is not a bool). */
export function evaluateCondition(source: string, context: ExpressionContext): boolean {
  startMeter();
  const value = runProgram(source, bindings(context));
  if (typeof value !== 'boolean') throw new ExpressionError('type', `the expression must be a bool, got ${describeValue(value)}`);
  return value;
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'double';
  if (Array.isArray(value)) return 'list';
  if (value instanceof Date) return 'timestamp';
  return typeof value === 'object' ? 'map' : typeof value;
}

/**
 * A CEL value as plain JSON: ints as numbers (as strings beyond 2^53), timestamps as ISO strings,
 * durations as seconds, bytes as base64, maps as objects. Throws `size` once the JSON passes `maxBytes`.
 */
function toJson(value: unknown, maxBytes: number): unknown {
  let bytes = 0;
  const add = (count: number) => {
    bytes += count;
    if (bytes > maxBytes) throw new ExpressionError('size', `the value is larger than ${maxBytes} bytes as JSON`);
  };
  const convert = (item: unknown): unknown => {
    if (item === null || item === undefined) {
      add(4);
      return null;
    }
    switch (typeof item) {
      case 'string':
        add(Buffer.byteLength(item) + 2);
        return item;
      case 'boolean':
        add(5);
        return item;
      case 'number': {
        const finite = Number.isFinite(item) ? item : null;
        add(String(finite).length);
        return finite;
      }
      case 'bigint': {
        const number = Number(item);
        const converted = Number.isSafeInteger(number) ? number : item.toString();
        add(String(converted).length + 2);
        return converted;
      }
    }
    if (item instanceof Date) return convert(item.toISOString());
    if (item instanceof Uint8Array) return convert(Buffer.from(item).toString('base64'));
    if (item instanceof DurationClass) {
      const duration = item as unknown as { seconds: bigint; nanos: number };
      return convert(Number(duration.seconds) + duration.nanos / 1e9);
    }
    if (item instanceof UnsignedIntClass) return convert((item as unknown as { valueOf(): bigint }).valueOf());
    if (Array.isArray(item) || item instanceof Set) {
      const list: unknown[] = [];
      add(2);
      for (const element of item as Iterable<unknown>) {
        add(1);
        list.push(convert(element));
      }
      return list;
    }
    const prototype: unknown = Object.getPrototypeOf(item);
    if (!(item instanceof Map) && prototype !== Object.prototype && prototype !== null) {
      // A CEL type value (`type(x)` prints as `Type<int>`): its name.
      return convert((item as { toString(): string }).toString().replace(/^Type<(.*)>$/, '$1'));
    }
    const entries: Iterable<[unknown, unknown]> = item instanceof Map ? (item as Map<unknown, unknown>) : Object.entries(item);
    const object: Record<string, unknown> = {};
    add(2);
    for (const [key, element] of entries) {
      const name = typeof key === 'string' ? key : (key as { toString(): string }).toString();
      add(Buffer.byteLength(name) + 4);
      object[name] = convert(element);
    }
    return object;
  };
  return convert(value);
}

// ---------------------------------------------------------------------------------------------
// Text with holes

interface TextPart {
  literal?: string;
  /** The hole's expression (trimmed) and how it was written, to name it in errors. */
  hole?: { source: string; written: string };
}

type ParsedText = { parts: TextPart[] } | { error: string };

const textCache = new LruCache<ParsedText>(COMPILED_CACHE_SIZE);

/**
 * Splits a text at its holes. A hole ends at the first `}}` outside a CEL string literal and outside
 * braces the expression opened, so `{{ {"a": {"b": 1}} }}` and `{{ "}}" }}` are one hole each.
 */
function parseText(text: string): ParsedText {
  const cached = textCache.get(text);
  if (cached) return cached;
  const parsed = parseTextUncached(text);
  textCache.set(text, parsed);
  return parsed;
}

function parseTextUncached(text: string): ParsedText {
  const parts: TextPart[] = [];
  let cursor = 0;
  for (let number = 1; ; number++) {
    const open = text.indexOf('{{', cursor);
    if (open === -1) break;
    if (open > cursor) parts.push({ literal: text.slice(cursor, open) });
    const close = holeEnd(text, open + 2);
    if (close === -1) return { error: `hole ${number} (at character ${open + 1}) has no closing }}` };
    const written = text.slice(open, close + 2);
    const source = text.slice(open + 2, close).trim();
    if (!source) return { error: `hole ${number} (${written}) is empty` };
    parts.push({ hole: { source, written } });
    cursor = close + 2;
  }
  if (cursor < text.length) parts.push({ literal: text.slice(cursor) });
  return { parts };
}

function holeEnd(text: string, from: number): number {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const char = text[i]!;
    if (char === '"' || char === "'") {
      i = stringLiteralEnd(text, i);
      if (i === -1) return -1;
    } else if (char === '{') depth++;
    else if (char === '}') {
      if (depth === 0 && text[i + 1] === '}') return i;
      if (depth > 0) depth--;
    }
  }
  return -1;
}

/** The index of the quote that closes the literal opened at `start` (triple quotes too), or -1. */
function stringLiteralEnd(text: string, start: number): number {
  const quote = text[start]!;
  const raw = /[rR]/.test(text[start - 1] ?? '');
  const delimiter = text.startsWith(quote.repeat(3), start) ? quote.repeat(3) : quote;
  for (let i = start + delimiter.length; i < text.length; i++) {
    if (text[i] === '\\' && !raw) i++;
    else if (text.startsWith(delimiter, i)) return i + delimiter.length - 1;
  }
  return -1;
}

/** Checks every `{{ }}` hole of a text: undefined when all are sound, else why not. */
export function checkText(text: string): string | undefined {
  const parsed = parseText(text);
  if ('error' in parsed) return parsed.error;
  let number = 0;
  for (const part of parsed.parts) {
    if (!part.hole) continue;
    number++;
    const problem = checkExpression(part.hole.source);
    if (problem) return `hole ${number} (${part.hole.written}): ${problem}`;
  }
  return undefined;
}

/** Renders a text's holes (each value stringified), capped at `maxLength` characters. Throws ExpressionError. */
export function renderText(text: string, context: ExpressionContext, maxLength = 4096): string {
  const parsed = parseText(text);
  if ('error' in parsed) throw new ExpressionError('syntax', parsed.error);
  const hasHoles = parsed.parts.some((part) => part.hole);
  const values = hasHoles ? bindings(context) : {};
  startMeter();
  let rendered = '';
  for (const part of parsed.parts) {
    rendered += part.hole ? stringify(runProgram(part.hole.source, values), maxLength) : part.literal!;
    if (rendered.length > maxLength) throw new ExpressionError('size', `the rendered text is longer than ${maxLength} characters`);
  }
  return rendered;
}

function stringify(value: unknown, maxLength: number): string {
  const json = toJson(value, maxLength * 4);
  if (json === null) return '';
  if (typeof json === 'string') return json;
  return JSON.stringify(json);
}
