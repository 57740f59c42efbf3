import type { StoredJson } from '../lib/stored-json.ts';
import { STORED_JSON_KEYWORD } from './schemas.ts';
import type { HttpServer } from './server.ts';

/**
 * Response serializers that write stored JSON verbatim. A response schema with a field marked by
 * `StoredJsonOf` (http/schemas.ts) is serialized in pieces: everything without such a field by
 * Fastify's own compiled serializer (fast-json-stringify), and each marked field as the text the
 * service stored, spliced in between. fast-json-stringify has no way to emit raw text, and going
 * through it would mean a `JSON.parse` per row and its generic path for free-form objects (about
 * half the CPU the events list spent on `data`).
 *
 * The bytes are those fast-json-stringify writes for the parsed value, because the stored text is
 * `JSON.stringify`'s and the properties keep the schema's order (stored-json.test.ts compares the
 * two). Other routes are left to Fastify's default serializer.
 */

type Serialize = (value: unknown) => string;
type Schema = Record<string, unknown>;
type Compile = (schema: Schema) => Serialize;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null;
}

function containsStoredJson(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.some(containsStoredJson);
  if (!isSchema(schema)) return false;
  if (schema[STORED_JSON_KEYWORD] === true) return true;
  return Object.values(schema).some(containsStoredJson);
}

function unsupported(schema: Schema): Error {
  return new Error(`stored JSON is supported inside required object properties and array items only, not in ${JSON.stringify(schema)}`);
}

function build(schema: Schema, compile: Compile): Serialize {
  if (!containsStoredJson(schema)) return compile(schema);
  if (schema[STORED_JSON_KEYWORD] === true) return (value) => (value as StoredJson<unknown>).text;

  if (schema.type === 'array' && isSchema(schema.items)) {
    const item = build(schema.items, compile);
    return (value) => {
      const items = value as unknown[];
      let out = '[';
      for (let i = 0; i < items.length; i++) out += (i === 0 ? '' : ',') + item(items[i]);
      return out + ']';
    };
  }

  const properties = schema.properties;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const keys = isSchema(properties) ? Object.keys(properties) : [];
  if (schema.type !== 'object' || !isSchema(properties) || keys.some((key) => !required.includes(key)) || 'patternProperties' in schema) {
    throw unsupported(schema);
  }
  // Runs of plain properties become one compiled object each (its braces cut off); each property
  // holding stored JSON is a piece of its own. Every property is required, so every run is
  // non-empty and the commas fall where fast-json-stringify puts them.
  const pieces: Serialize[] = [];
  let run: string[] = [];
  const endRun = () => {
    if (run.length === 0) return;
    const subset = Object.fromEntries(run.map((key) => [key, properties[key]]));
    const whole = compile({ type: 'object', properties: subset, required: run });
    pieces.push((value) => whole(value).slice(1, -1));
    run = [];
  };
  for (const key of keys) {
    const property = properties[key];
    if (!isSchema(property) || !containsStoredJson(property)) {
      run.push(key);
      continue;
    }
    endRun();
    const prefix = JSON.stringify(key) + ':';
    const inner = build(property, compile);
    pieces.push((value) => prefix + inner((value as Record<string, unknown>)[key]));
  }
  endRun();
  return (value) => {
    let out = '{';
    for (let i = 0; i < pieces.length; i++) out += (i === 0 ? '' : ',') + pieces[i]!(value);
    return out + '}';
  };
}

/** A serializer for `schema` that splices stored JSON in; `compile` is Fastify's serializer compiler for the rest. */
export function compileStoredJsonSerializer(schema: object, compile: Compile): Serialize {
  return build(schema as Schema, compile);
}

/**
 * Gives every route whose response schema holds stored JSON the splicing serializer. Registered
 * before the routes. Compiled at the first answer, as Fastify's own compiler is set up by then.
 */
export function registerStoredJsonSerializers(app: HttpServer): void {
  app.addHook('onRoute', (route) => {
    if (route.serializerCompiler || !containsStoredJson(route.schema?.response)) return;
    route.serializerCompiler = splicingCompiler(app);
  });
}

/** The route's serializer: stored JSON spliced in, the rest by Fastify's compiled serializer. */
function splicingCompiler(app: HttpServer): NonNullable<HttpServer['serializerCompiler']> {
  return ({ schema, ...context }) => {
    // A schema the splice cannot serve fails at start-up, not at its first answer.
    build(schema as Schema, () => () => '');
    let serialize: Serialize | undefined;
    return (value: unknown) => {
      if (!serialize) {
        const fastify = app.serializerCompiler;
        if (!fastify) throw new Error('Fastify has no serializer compiler yet');
        serialize = build(schema as Schema, (part) => fastify({ schema: part, ...context }));
      }
      return serialize(value);
    };
  };
}
