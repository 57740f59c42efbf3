/**
 * CEL expressions and `{{ CEL }}` text holes: checked when a version is written, evaluated by runs.
 * (Contract: the bodies are being written; see docs/automations.md#expressions.)
 */

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

/** Parses and type-checks an expression against the context's names: undefined when it is sound, else why not. */
export function checkExpression(source: string): string | undefined {
  throw new Error(`not written yet: ${source}`);
}

/** Checks every `{{ }}` hole of a text: undefined when all are sound, else why not. */
export function checkText(text: string): string | undefined {
  throw new Error(`not written yet: ${text}`);
}

/** Evaluates under the cost cap; the value as plain JSON. Throws ExpressionError. */
export function evaluateExpression(source: string, context: ExpressionContext): unknown {
  throw new Error(`not written yet: ${source} ${Object.keys(context).length}`);
}

/** Evaluates an expression that must be a bool. Throws ExpressionError (`type` when it is not a bool). */
export function evaluateCondition(source: string, context: ExpressionContext): boolean {
  throw new Error(`not written yet: ${source} ${Object.keys(context).length}`);
}

/** Renders a text's holes (each value stringified), capped at `maxLength` characters. Throws ExpressionError. */
export function renderText(text: string, context: ExpressionContext, maxLength = 4096): string {
  throw new Error(`not written yet: ${text} ${Object.keys(context).length} ${maxLength}`);
}
