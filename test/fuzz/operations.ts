/**
 * The operations of a served OpenAPI document, as the fuzz needs them, and valid-looking values for
 * their parameters and bodies sampled from the same schemas (the baseline each mutation changes in
 * one place, so that the mutation, not the rest of the request, is what the server has to refuse).
 */
import type { Random } from './random.ts';

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  if?: JsonSchema;
  then?: JsonSchema;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  default?: unknown;
  examples?: unknown[];
  $ref?: string;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: JsonSchema;
}

export type CredentialKind = 'organization_key' | 'connection_key' | 'dashboard_token';

export interface Operation {
  /** `GET /v1/connections/{id}`: names the operation in reports and seeds its own random stream. */
  key: string;
  method: string;
  /** The document's template, `/v1/connections/{id}`. */
  path: string;
  pathParams: Parameter[];
  queryParams: Parameter[];
  idempotencyKey: 'required' | 'optional' | undefined;
  body: { contentType: string; schema: JsonSchema } | undefined;
  /** The credential kinds the operation accepts; undefined for a public one. */
  credentials: readonly CredentialKind[] | undefined;
}

interface OpenApiOperation {
  parameters?: (Parameter & { $ref?: string })[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
  security?: unknown[];
  'x-access'?: { credentials: string[] | 'any' };
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);
const ALL_CREDENTIALS: readonly CredentialKind[] = ['organization_key', 'connection_key', 'dashboard_token'];

/** Every operation of the document, in the document's order. */
export function operationsOf(document: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const parameters = (operation.parameters ?? []).map((parameter) => ({
        ...parameter,
        required: parameter.required === true,
        schema: resolve(document, parameter.schema ?? {}),
      }));
      const idempotency = parameters.find((parameter) => parameter.in === 'header' && parameter.name === 'idempotency-key');
      const [contentType, media] = Object.entries(operation.requestBody?.content ?? {})[0] ?? [];
      const access = operation['x-access'];
      operations.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        pathParams: parameters.filter((parameter) => parameter.in === 'path'),
        queryParams: parameters.filter((parameter) => parameter.in === 'query'),
        idempotencyKey: idempotency ? (idempotency.required ? 'required' : 'optional') : undefined,
        body: contentType ? { contentType, schema: resolve(document, media?.schema ?? {}) } : undefined,
        credentials: operation.security ? (access?.credentials === 'any' ? ALL_CREDENTIALS : ((access?.credentials ?? []) as CredentialKind[])) : undefined,
      });
    }
  }
  return operations;
}

/** Inlines `$ref`s into components (the document inlines its schemas today; a later one may not). */
function resolve(document: OpenApiDocument, schema: JsonSchema, depth = 0): JsonSchema {
  if (depth > 20 || typeof schema !== 'object' || schema === null) return schema;
  if (schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    return resolve(document, document.components?.schemas?.[name] ?? {}, depth + 1);
  }
  const resolved: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties') {
      resolved[key] = Object.fromEntries(Object.entries(value as Record<string, JsonSchema>).map(([name, sub]) => [name, resolve(document, sub, depth + 1)]));
    } else if (Array.isArray(value)) {
      resolved[key] = value.map((item: unknown) => (typeof item === 'object' && item !== null ? resolve(document, item as JsonSchema, depth + 1) : item));
    } else if (typeof value === 'object' && value !== null && key !== 'const' && key !== 'default') {
      resolved[key] = resolve(document, value as JsonSchema, depth + 1);
    } else {
      resolved[key] = value;
    }
  }
  return resolved;
}

/** What the fuzz knows about the server it runs against: real ids to put where ids go. */
export interface World {
  /** Ids of the fuzzing organization's own records, by prefix (`conn`, `msg`, ...). */
  ids: Record<string, string[]>;
  /** Ids of another organization's records, by prefix. */
  otherIds: Record<string, string[]>;
  /** Values for parameters and fields known by name where no schema says enough (the provider's version, a phone number id). */
  named: Record<string, string>;
  /** A receiver that answers at once: where webhook URLs point, so that no mutation waits on a real network. */
  receiverUrl: string;
  /** The server's clock: dates in samples are a day ahead of it. */
  now: Date;
}

const ID_PATTERN = /^\^([a-z]+)_\[0-9A-HJKMNP-TV-Z\]\{26\}\$$/;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The prefix an id pattern (`^conn_[0-9A-HJKMNP-TV-Z]{26}$`) asks for. */
export function idPrefixOf(schema: JsonSchema): string | undefined {
  return schema.pattern ? ID_PATTERN.exec(schema.pattern)?.[1] : undefined;
}

/** A well-formed id of that prefix which names nothing. */
export function unknownId(prefix: string, random: Random): string {
  let ulid = '';
  for (let i = 0; i < 26; i++) ulid += CROCKFORD[i === 0 ? random.int(8) : random.int(32)];
  return `${prefix}_${ulid}`;
}

/** One of the world's own ids of that prefix, or a well-formed one that names nothing. */
export function ownId(world: World, prefix: string, random: Random): string {
  const known = world.ids[prefix];
  return known && known.length > 0 ? random.pick(known) : unknownId(prefix, random);
}

/** Strings tried in turn against a pattern no other rule fills: the first that matches is the sample. */
const PATTERN_CANDIDATES = ['+15550001234', '15550001234', '123456', 'fuzz_name', 'en_US', 'US', 'USD', '2026-06-02', 'v24.0', 'https://127.0.0.1:9/fuzz.jpg'];

export function sampleString(schema: JsonSchema, world: World, random: Random, name = ''): string {
  if (schema.enum) return String(random.pick(schema.enum));
  if (schema.const !== undefined) return typeof schema.const === 'string' ? schema.const : JSON.stringify(schema.const);
  const named = world.named[name];
  if (named !== undefined && (!schema.pattern || new RegExp(schema.pattern, 'u').test(named))) return named;
  const prefix = idPrefixOf(schema);
  if (prefix) return ownId(world, prefix, random);
  if (schema.format === 'date-time') return new Date(world.now.getTime() + 86_400_000).toISOString();
  if (schema.format === 'email') return `fuzz-${random.int(1_000_000)}@example.com`;
  if (name === 'url' || schema.format === 'uri') return world.receiverUrl;
  if (schema.pattern) {
    const pattern = new RegExp(schema.pattern, 'u');
    const candidate = PATTERN_CANDIDATES.find((value) => pattern.test(value));
    if (candidate) return candidate;
  }
  const text = `fuzz ${name}`.trim();
  const min = schema.minLength ?? 0;
  const padded = text.length >= min ? text : text + 'x'.repeat(min - text.length);
  return schema.maxLength !== undefined ? padded.slice(0, Math.max(schema.maxLength, min)) : padded;
}

/** A value the schema accepts, as far as sampling without a validator can tell; optional fields half of the time. */
export function sample(schema: JsonSchema, world: World, random: Random, name = '', depth = 0): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return random.pick(schema.enum);
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches && branches.length > 0) return sample(random.pick(branches), world, random, name, depth);
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== 'null') ?? 'null') : schema.type;
  if (type === 'object' || (!type && (schema.properties || schema.allOf))) return sampleObject(schema, world, random, depth);
  switch (type) {
    case 'string':
      return sampleString(schema, world, random, name);
    case 'integer':
    case 'number': {
      const low = schema.minimum ?? 1;
      const high = Math.max(low, schema.maximum ?? low + 10);
      return low + random.int(Math.min(high - low, 1000) + 1);
    }
    case 'boolean':
      return random.int(2) === 0;
    case 'array': {
      if (depth > 6 || !schema.items) return [];
      const count = Math.max(1, schema.minItems ?? 1);
      return Array.from({ length: count }, () => sample(schema.items!, world, random, name, depth + 1));
    }
    case 'null':
      return null;
    default:
      return sampleString(schema, world, random, name);
  }
}

function sampleObject(schema: JsonSchema, world: World, random: Random, depth: number): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  if (depth > 6) return value;
  const required = new Set(schema.required ?? []);
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (required.has(name) || random.int(2) === 0) value[name] = sample(property, world, random, name, depth + 1);
  }
  // `allOf` of `if`/`then` pairs: a discriminated shape (a schedule's recurrence) adds the fields its branch requires.
  for (const part of schema.allOf ?? []) {
    const branch = part.if && part.then ? (matches(part.if, value) ? part.then : undefined) : part;
    if (!branch) continue;
    for (const [name, property] of Object.entries(branch.properties ?? {})) {
      if (name in value) continue;
      if ((branch.required ?? []).includes(name) || random.int(2) === 0) value[name] = sample(property, world, random, name, depth + 1);
    }
  }
  return value;
}

/** Whether a sampled object meets an `if`: the discriminating fields present and among their enums. */
function matches(condition: JsonSchema, value: Record<string, unknown>): boolean {
  for (const name of condition.required ?? []) if (!(name in value)) return false;
  for (const [name, property] of Object.entries(condition.properties ?? {})) {
    if (!(name in value)) continue;
    if (property.enum && !property.enum.includes(value[name])) return false;
    if (property.const !== undefined && property.const !== value[name]) return false;
  }
  return true;
}
