/**
 * The rules of a definition that its schema cannot say. (Contract: the body is being written.)
 */
import type { Definition } from '../definition.schemas.ts';

/** One thing wrong with a definition: where (a JSON pointer into the request body), and what. */
export interface DefinitionProblem {
  pointer: string;
  message: string;
}

/**
 * Every problem of a definition that passed its schema, pointers prefixed with `base`
 * (`/definition`): step ids unique, `start` and every `next`/branch a step, every step reachable
 * from `start`, every cycle through a waiting step (the static loop guard), every CEL expression and
 * text hole sound, `event` given exactly for `event` triggers. Empty when it is sound.
 */
export function checkDefinition(definition: Definition, base = '/definition'): DefinitionProblem[] {
  throw new Error(`not written yet: ${definition.start} ${base}`);
}

/** The templates a definition sends, with the pointer of each send_template step. */
export function templatesUsed(definition: Definition, base = '/definition'): { pointer: string; name: string; language: string }[] {
  throw new Error(`not written yet: ${definition.start} ${base}`);
}
