/**
 * A definition's `input_schema`: a JSON Schema written by a customer, compiled by Ajv when a version is
 * written and again when `POST /v1/runs` validates an input against it. Its `pattern`s run on RE2
 * (linear time): the schema is untrusted, and so is the input it meets.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { RE2JS } from 're2js';

const re2: ((pattern: string) => { test(text: string): boolean }) & { code: string } = Object.assign(
  (pattern: string) => {
    const regex = RE2JS.compile(pattern);
    return { test: (text: string) => regex.test(text) };
  },
  { code: 're2js' },
);

/**
 * A new Ajv each time: Ajv keeps every schema it compiled (and refuses a second schema with the same
 * `$id`), which a long-lived instance fed with customers' schemas would turn into a leak. Unknown
 * keywords and formats are refused (a misspelt `requried` would otherwise check nothing, silently);
 * Ajv's stricter type rules (`properties` without `type: object`) are not, as JSON Schema allows them.
 */
export function compileInputSchema(schema: Record<string, unknown>): ValidateFunction {
  const ajv = new Ajv({
    allErrors: true,
    strictSchema: true,
    strictNumbers: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    logger: false,
    code: { regExp: re2 },
  });
  addFormats.default(ajv);
  return ajv.compile(schema);
}

/** Undefined when the schema compiles, else why not. */
export function checkInputSchema(schema: Record<string, unknown>): string | undefined {
  try {
    compileInputSchema(schema);
    return undefined;
  } catch (error) {
    return `is not a valid JSON Schema: ${(error as Error).message}`;
  }
}
