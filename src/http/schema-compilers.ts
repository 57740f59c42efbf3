import { createRequire } from 'node:module';
import type { FastifySchemaCompiler, FastifySchemaValidationError, FastifySerializerCompiler } from 'fastify';
import { validatorCompiler as compileValidator } from './validation.ts';

/**
 * Route schemas compiled on a route's first request, not at start-up. Compiling every validator
 * (Ajv) and response serializer (fast-json-stringify) of every route, each GET twice for its HEAD
 * twin, held about 45 MiB of generated code in a process that serves a handful of routes most of
 * the time (docs/benchmarks.md#memory). The compiled function is the same either way, so answers
 * and error envelopes are too; what moves is when a broken schema is found, which is why
 * `compileAll()` exists: a test compiles every route's schemas, as a start-up used to.
 */
export interface SchemaCompilers {
  validatorCompiler: FastifySchemaCompiler<unknown>;
  serializerCompiler: FastifySerializerCompiler<unknown>;
  /** Compiles every schema not compiled yet; throws the first compilation error, naming its route. */
  compileAll(): void;
}

type Serializer = (data: unknown) => string;
type Validator = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null };
type SerializerFactory = (externalSchemas: Record<string, unknown>, options: Record<string, unknown> | undefined) => FastifySerializerCompiler<unknown>;

// Fastify's own default serializer compiler, required from Fastify's location so that it is the
// version Fastify would have used itself: only its timing changes here.
const defaultSerializerFactory = createRequire(import.meta.resolve('fastify'))('@fastify/fast-json-stringify-compiler') as () => SerializerFactory;

// The branch types a `type` list can stand for: fast-json-stringify tells them apart with `typeof`,
// `Array.isArray` and `=== null`, where an `anyOf` asks Ajv.
const LISTABLE_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStringEnum(schema: Record<string, unknown>): boolean {
  return schema.type === undefined && Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.every((value) => typeof value === 'string');
}

/**
 * A response schema rewritten for the serializer only; the schema Fastify validates with and the
 * OpenAPI document show are untouched, and the output is the same bytes (tested on every list and
 * object the API returns).
 *
 * - Every `anyOf: [X, null]` (what `Nullable(...)` writes) becomes X with `type: [X's type, 'null']`.
 *   fast-json-stringify serializes an `anyOf` by validating the value against each branch with Ajv
 *   before writing it: a `date-time` format check on every nullable timestamp of every row, and for
 *   a nullable object (an expanded contact, a conversation's last message) a full validation of that
 *   object, every pattern and format in it, before it is written field by field anyway. A type list
 *   it tells apart with `=== null`.
 * - The same for a nullable `enum` of strings (what `Type.Enum` writes has no `type`), and an array
 *   of such an enum gets `type: 'string'` for its items: fast-json-stringify writes an array of
 *   typed strings with one `JSON.stringify` of the whole array, an untyped one with a call per item
 *   (the 40 scopes of `/v1/identity`: 6 µs a request, 4 µs typed). A single enum value is left
 *   untyped: typed, it is written by about fifteen lines of generated code instead of one, and a
 *   conversation page, whose statuses, types and states were all typed so, took 20 % more CPU
 *   (measured; most likely its serializer grew past what V8 optimizes whole).
 */
export function serializerSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(serializerSchema);
  if (!isPlainObject(schema)) return schema;
  const { anyOf } = schema;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const nullIndex = anyOf.findIndex((branch) => isPlainObject(branch) && branch.type === 'null' && Object.keys(branch).length === 1);
    const value: unknown = anyOf[1 - nullIndex];
    if (nullIndex !== -1 && isPlainObject(value)) {
      const valueType = isStringEnum(value) ? 'string' : value.type;
      if (typeof valueType === 'string' && LISTABLE_TYPES.has(valueType) && !('anyOf' in value)) {
        const { anyOf: _branches, ...rest } = schema;
        return { ...(serializerSchema(rest) as object), ...(serializerSchema(value) as object), type: [valueType, 'null'] };
      }
    }
  }
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === 'items' && isPlainObject(value) && isStringEnum(value) ? { ...value, type: 'string' } : serializerSchema(value),
    ]),
  );
}

export function createSchemaCompilers(): SchemaCompilers {
  const pending = new Set<() => void>();
  let buildSerializer: FastifySerializerCompiler<unknown> | undefined;

  const validatorCompiler: FastifySchemaCompiler<unknown> = (route) => {
    let compiled: Validator | undefined;
    const compile = () => {
      if (compiled) return compiled;
      try {
        compiled = compileValidator(route) as Validator;
      } catch (error) {
        throw new Error(`${route.method} ${route.url} ${route.httpPart ?? ''}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      pending.delete(compile);
      return compiled;
    };
    pending.add(compile);
    // Fastify reads the validator's `errors` after a `false`, as it would Ajv's own function's.
    const validate = Object.assign(
      (data: unknown) => {
        const validator = compile();
        const valid = validator(data);
        validate.errors = validator.errors;
        return valid;
      },
      { errors: null as Validator['errors'] },
    );
    return validate;
  };

  const serializerCompiler: FastifySerializerCompiler<unknown> = (route) => {
    let compiled: Serializer | undefined;
    const compile = () => {
      if (compiled) return compiled;
      buildSerializer ??= defaultSerializerFactory()({}, undefined);
      try {
        compiled = buildSerializer({ ...route, schema: serializerSchema(route.schema) }) as Serializer;
      } catch (error) {
        throw new Error(`${route.method} ${route.url} response ${route.httpStatus}: ${error instanceof Error ? error.message : String(error)}`, {
          cause: error,
        });
      }
      pending.delete(compile);
      return compiled;
    };
    pending.add(compile);
    return (data: unknown) => compile()(data);
  };

  return {
    validatorCompiler,
    serializerCompiler,
    compileAll() {
      for (const compile of [...pending]) compile();
    },
  };
}
