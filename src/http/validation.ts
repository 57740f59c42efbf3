import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';

type SchemaErrorDataVar = 'body' | 'headers' | 'params' | 'querystring';
import { AppError, type ErrorDetail } from '../lib/errors.ts';

/**
 * Validation is strict: unknown keys are errors (never silently dropped) and JSON bodies are never
 * coerced (`"5"` is not 5). Query strings, path parameters and headers arrive as text, so only those
 * are coerced. Fastify's default Ajv does the opposite on both counts, hence these two instances.
 */
const MAX_DETAILS = 10;

function createAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: false,
    coerceTypes,
    useDefaults: true,
    strict: true,
    // OpenAPI annotations that Ajv does not know but our schemas carry for the generated document.
    keywords: ['example', 'x-scope'],
  });
  addFormats.default(ajv);
  return ajv;
}

const bodyAjv = createAjv(false);
const textAjv = createAjv(true);

/**
 * A validator for JSON that arrives inside something else rather than as a request body (a tool
 * call's arguments, mcp/): the body instance, so the same strictness holds. Errors: `validationError(validate.errors, 'body')`.
 */
export function compileJsonValidator(schema: object): ValidateFunction {
  return bodyAjv.compile(schema);
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return bodyAjv.compile(schema as object);
  return finiteNumbersOnly(textAjv.compile(schema as object));
};

/**
 * Ajv coerces a numeric text too large for a double (`1e309`, `Infinity`) to Infinity without
 * checking the result, and skips `minimum`/`maximum` for a number that is not finite, so
 * `?limit=1e309` went through as Infinity (SQLite: a 500 on `LIMIT`). Text parts (query, path,
 * headers) are flat objects: any value coerced to a non-finite number is refused as the type.
 */
function finiteNumbersOnly(validate: ValidateFunction): ValidateFunction {
  const checked = ((data: unknown) => {
    const valid = validate(data);
    const infinite =
      valid && typeof data === 'object' && data !== null
        ? Object.entries(data).find(([, value]) => typeof value === 'number' && !Number.isFinite(value))
        : undefined;
    checked.errors = infinite
      ? [
          {
            instancePath: `/${escapePointerToken(infinite[0])}`,
            schemaPath: '#/type',
            keyword: 'type',
            params: { type: 'number' },
            message: 'must be a finite number',
          },
        ]
      : validate.errors;
    return valid && !infinite;
  }) as ValidateFunction;
  return checked;
}

const POINTER_ROOT: Record<SchemaErrorDataVar, string> = {
  body: '',
  querystring: '/query',
  params: '/path',
  headers: '/header',
};

const DETAIL_CODE: Record<string, string> = {
  required: 'missing',
  additionalProperties: 'unknown_field',
  type: 'invalid_type',
  format: 'invalid_format',
  pattern: 'invalid_format',
  minLength: 'too_short',
  maxLength: 'too_long',
  minimum: 'out_of_range',
  maximum: 'out_of_range',
  exclusiveMinimum: 'out_of_range',
  exclusiveMaximum: 'out_of_range',
  enum: 'invalid_value',
  const: 'invalid_value',
  minItems: 'too_few',
  maxItems: 'too_many',
  uniqueItems: 'duplicate',
  minProperties: 'too_few',
  maxProperties: 'too_many',
};

function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

function detailFor(error: ErrorObject | FastifySchemaValidationError, root: string): ErrorDetail {
  const params = error.params as Record<string, unknown>;
  let pointer = root + error.instancePath;
  let message = error.message ?? 'is invalid';
  if (error.keyword === 'required' && typeof params.missingProperty === 'string') {
    pointer += '/' + escapePointerToken(params.missingProperty);
    message = 'is required';
  } else if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    pointer += '/' + escapePointerToken(params.additionalProperty);
    message = 'is not a known field';
  } else if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    message = `must be one of: ${params.allowedValues.map(String).join(', ')}`;
  }
  return { param: pointer || '/', code: DETAIL_CODE[error.keyword] ?? 'invalid', message };
}

/** Turns Ajv's errors into our `validation_failed` error; `param` is the first offending field. */
export function validationError(errors: ReadonlyArray<ErrorObject | FastifySchemaValidationError>, dataVar: SchemaErrorDataVar): AppError {
  const root = POINTER_ROOT[dataVar];
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const error of errors) {
    // anyOf/oneOf report one summary error beside their branches' errors; the branches say more.
    if (error.keyword === 'anyOf' || error.keyword === 'oneOf' || error.keyword === 'if') continue;
    const detail = detailFor(error, root);
    const key = `${detail.param} ${detail.code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push(detail);
    if (details.length === MAX_DETAILS) break;
  }
  if (details.length === 0 && errors[0]) details.push(detailFor(errors[0], root));
  const first = details[0];
  const message = first ? `${first.param} ${first.message}.` : 'The request failed validation.';
  return new AppError('validation_failed', message, { param: first?.param ?? null, details });
}
