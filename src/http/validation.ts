import { Ajv, type ErrorObject } from 'ajv';
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

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  return ajv.compile(schema as object);
};

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
