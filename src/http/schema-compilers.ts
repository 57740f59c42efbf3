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
        compiled = buildSerializer(route) as Serializer;
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
