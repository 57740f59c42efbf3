/**
 * The fuzz cases of one operation: a valid-looking request sampled from the operation's schemas,
 * changed in one place by a mutation family. The families that apply take turns in a seeded order
 * (one with nothing to change this time passes its turn to the next), so a few times as many cases
 * as families give each family its cases on every operation.
 */
import { BODY_LIMIT_BYTES } from '../../src/http/server.ts';
import { idPrefixOf, ownId, sample, sampleString, unknownId, type CredentialKind, type JsonSchema, type Operation, type World } from './operations.ts';
import { streamOf, type Random } from './random.ts';

export type Credential = CredentialKind | 'none';

export interface FuzzCase {
  operation: Operation;
  /** The case's number within its operation. */
  index: number;
  family: string;
  /** What the mutation changed, for the report. */
  note: string;
  credential: Credential;
  method: string;
  /** Sent as written: percent-escapes and dot segments are not normalised on the way. */
  path: string;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
}

type Body = { kind: 'json'; value: unknown; literals: Map<string, string> } | { kind: 'raw'; bytes: string | Uint8Array };

/** A request before encoding: the part a family changes is still structured. */
interface Draft {
  /** Path parameters, already percent-encoded. */
  pathValues: Record<string, string>;
  /** `name=value` pairs, already percent-encoded. */
  query: string[];
  body: Body | undefined;
  contentType: string | undefined;
  headers: Record<string, string>;
}

interface Context {
  operation: Operation;
  world: World;
  random: Random;
  draft: Draft;
}

interface Family {
  name: string;
  applies(operation: Operation): boolean;
  /** Changes the draft and says how; undefined when this operation offers the family nothing to change. */
  mutate(context: Context): string | undefined;
}

const JSON_TYPE = 'application/json';

const takesJson = (operation: Operation) => operation.method !== 'GET' && (operation.body === undefined || operation.body.contentType === JSON_TYPE);
const takesBody = (operation: Operation) => operation.method !== 'GET';
const hasPathParams = (operation: Operation) => operation.pathParams.length > 0;
const hasQueryParams = (operation: Operation) => operation.queryParams.length > 0;
const CURSOR_NAMES = ['after', 'before', 'starting_after', 'ending_before', 'cursor'];
const cursorsOf = (operation: Operation) => operation.queryParams.filter((parameter) => CURSOR_NAMES.includes(parameter.name));

// ---- JSON bodies: locations, and values written as raw JSON text ----

type Segments = (string | number)[];

/** Every location inside a JSON value (not the root), with its value. */
function locations(value: unknown, at: Segments = [], found: { at: Segments; value: unknown }[] = []) {
  const children: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : isObject(value)
      ? Object.entries(value)
      : [];
  for (const [segment, item] of children) {
    found.push({ at: [...at, segment], value: item });
    locations(item, [...at, segment], found);
  }
  return found;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function jsonBody(draft: Draft): Extract<Body, { kind: 'json' }> {
  if (draft.body?.kind !== 'json') {
    draft.body = { kind: 'json', value: {}, literals: new Map() };
    draft.contentType = JSON_TYPE;
  }
  if (!isObject(draft.body.value) && !Array.isArray(draft.body.value)) draft.body.value = {};
  return draft.body;
}

function setAt(root: unknown, at: Segments, value: unknown): void {
  let node = root as Record<string | number, unknown>;
  for (const segment of at.slice(0, -1)) node = node[segment] as Record<string | number, unknown>;
  // An own `__proto__` key, which JSON.stringify writes, rather than the object's prototype.
  Object.defineProperty(node, at[at.length - 1]!, { value, enumerable: true, writable: true, configurable: true });
}

function deleteAt(root: unknown, at: Segments): void {
  let node = root as Record<string | number, unknown>;
  for (const segment of at.slice(0, -1)) node = node[segment] as Record<string | number, unknown>;
  const last = at[at.length - 1]!;
  if (Array.isArray(node)) node.splice(Number(last), 1);
  else delete node[last];
}

const pointerOf = (at: Segments) => (at.length === 0 ? '/' : '/' + at.map((segment) => String(segment).replaceAll('~', '~0').replaceAll('/', '~1')).join('/'));

/** The schema at a location of a sampled body, as far as properties and items lead. */
function schemaAt(schema: JsonSchema | undefined, at: Segments): JsonSchema | undefined {
  let node = schema;
  for (const segment of at) {
    if (!node) return undefined;
    if (typeof segment === 'number') node = node.items;
    else
      node =
        node.properties?.[segment] ??
        node.allOf?.map((part) => (part.then ?? part).properties?.[segment]).find(Boolean) ??
        (node.anyOf ?? node.oneOf)?.map((part) => part.properties?.[segment]).find(Boolean);
  }
  return node;
}

/**
 * Where a family writes its value: an existing location of the body (a string one when `want` says
 * so and there is one), or else a property of the schema not sent yet, or else a field of its own.
 */
function target(context: Context, want?: (value: unknown) => boolean): { at: Segments; value: unknown } {
  const body = jsonBody(context.draft);
  const all = locations(body.value);
  const wanted = want ? all.filter((location) => want(location.value)) : all;
  if (wanted.length > 0 && context.random.chance(0.85)) return context.random.pick(wanted);
  if (all.length > 0 && context.random.chance(0.5)) return context.random.pick(all);
  const unsent = Object.keys(context.operation.body?.schema.properties ?? {}).filter((name) => isObject(body.value) && !(name in body.value));
  const name = unsent.length > 0 ? context.random.pick(unsent) : 'fuzz';
  return { at: Array.isArray(body.value) ? [0] : [name], value: undefined };
}

/** Puts raw JSON text (a number JSON.stringify cannot write, a nesting too deep to build) at a location. */
function setLiteral(context: Context, at: Segments, literal: string): void {
  const body = jsonBody(context.draft);
  const placeholder = `\u0001fuzz-literal-${body.literals.size}\u0001`;
  body.literals.set(placeholder, literal);
  setAt(body.value, at, placeholder);
}

function encodeJson(body: Extract<Body, { kind: 'json' }>): string {
  let text = JSON.stringify(body.value) ?? '';
  for (const [placeholder, literal] of body.literals) text = text.replace(JSON.stringify(placeholder), () => literal);
  return text;
}

const byteLength = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '');

// ---- values ----

const WRONG_TYPES: unknown[] = [0, -1, 1.5, 'x', '', true, false, null, [], [1, 'a'], {}, { a: 1 }];
const typeOf = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);
const UNKNOWN_KEYS = [
  'colour',
  'fuzz',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '',
  ' ',
  'ID',
  'Id',
  'k'.repeat(300),
  'é',
  '\u{1F600}',
  '$where',
];
const NUMBER_LITERALS = [
  '1e309',
  '-1e309',
  '-0',
  '9007199254740993',
  '-9007199254740993',
  '1e-400',
  '123456789012345678901234567890',
  '0.1e1',
  '1E2',
  '-9223372036854775809',
  '4.9e-324',
];
const NUMBERISH_STRINGS = ['NaN', 'Infinity', '-Infinity', '-0', '1e309', '0x10', '1_000', ' 5', '5 ', '١٢', '9007199254740993'];
const MALFORMED_BODIES = [
  '',
  ' ',
  '{',
  '}',
  '[]',
  '[{}]',
  '"x"',
  '1',
  'null',
  'true',
  '{"a":1}garbage',
  '{"a":1,}',
  "{'a':1}",
  'NaN',
  '1e309',
  '\uFEFF{}',
  '{"a":"\\x"}',
  '{"a":"\\u12"}',
  '{"a":01}',
  '{"a"}',
  '['.repeat(10),
];
const CONTENT_TYPES = [
  undefined,
  'text/plain',
  'text/plain; charset=utf-8',
  'application/json; charset=utf-16',
  'application/json; charset=utf-16le',
  'application/json; charset=iso-8859-1',
  'application/json;charset="utf-16"',
  'APPLICATION/JSON',
  'application/json; charset=UTF-8',
  'application/jsonx',
  'application/vnd.api+json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=fuzz',
  'multipart/form-data',
  'application/octet-stream',
  '*/*',
  'application/json, text/plain',
  'application/json; boundary=x; charset=utf-8; q=0.5',
  ';',
];
const INVALID_UTF8 = [[0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xff], [0xf4, 0x90, 0x80, 0x80], [0xe0, 0x80]];

function stringWith(random: Random, inserted: string): string {
  const base = random.pick(['', 'a', 'hello', 'fuzz name']);
  const at = random.int(base.length + 1);
  return base.slice(0, at) + inserted + base.slice(at);
}

// ---- the families ----

const FAMILIES: Family[] = [
  {
    // The sampled request as it is: the handlers' own paths, with values no test picked.
    name: 'baseline',
    applies: () => true,
    mutate: () => 'nothing changed',
  },
  {
    name: 'body.edge-values',
    applies: (operation) => takesJson(operation) && operation.body !== undefined,
    mutate(context) {
      const body = jsonBody(context.draft);
      const leaves = locations(body.value).filter(({ value }) => typeof value === 'string' || typeof value === 'number');
      if (leaves.length === 0) return undefined;
      const { at, value } = context.random.pick(leaves);
      const schema = schemaAt(context.operation.body?.schema, at) ?? {};
      let edge: unknown;
      if (typeof value === 'number') edge = context.random.pick([schema.minimum, schema.maximum, 0].filter((candidate) => candidate !== undefined));
      else if (schema.enum || schema.pattern || schema.format) return undefined;
      else {
        const unit = context.random.pick(['a', 'é', '\u{1F600}', '\u05D0', 'e\u0301', '\u200B', '\uFEFF', ' ', '<', '%', '\\']);
        const length = context.random.pick([schema.maxLength ?? 1000, schema.minLength ?? 1, Math.max(schema.minLength ?? 1, 1)]);
        // maxLength counts code points in Ajv (unicode: true), so a surrogate pair is one.
        edge = Array.from({ length }, () => unit).join('');
      }
      setAt(body.value, at, edge);
      return `${pointerOf(at)} = ${truncate(JSON.stringify(edge))}`;
    },
  },
  {
    name: 'body.wrong-type',
    applies: takesJson,
    mutate(context) {
      const location = target(context);
      const value = context.random.pick(WRONG_TYPES.filter((candidate) => typeOf(candidate) !== typeOf(location.value)));
      setAt(jsonBody(context.draft).value, location.at, value);
      return `${pointerOf(location.at)} = ${JSON.stringify(value)}`;
    },
  },
  {
    name: 'body.missing-required',
    applies: (operation) => takesJson(operation) && operation.body !== undefined,
    mutate(context) {
      const body = jsonBody(context.draft);
      const candidates: Segments[] = [];
      for (const { at, value } of [{ at: [] as Segments, value: body.value }, ...locations(body.value)]) {
        if (!isObject(value)) continue;
        const schema = schemaAt(context.operation.body?.schema, at);
        const required = [...(schema?.required ?? []), ...(schema?.allOf ?? []).flatMap((part) => part.then?.required ?? [])];
        for (const name of required) if (name in value) candidates.push([...at, name]);
      }
      if (candidates.length === 0) {
        body.value = {};
        return 'every field left out';
      }
      const at = context.random.pick(candidates);
      deleteAt(body.value, at);
      return `${pointerOf(at)} left out`;
    },
  },
  {
    name: 'body.unknown-field',
    applies: takesJson,
    mutate(context) {
      const body = jsonBody(context.draft);
      const objects = [{ at: [] as Segments, value: body.value }, ...locations(body.value)].filter((location) => isObject(location.value));
      if (objects.length === 0) return undefined;
      const { at } = context.random.chance(0.5) ? objects[0]! : context.random.pick(objects);
      const key = context.random.pick(UNKNOWN_KEYS);
      const value = context.random.pick(WRONG_TYPES);
      setAt(body.value, [...at, key], value);
      return `${pointerOf([...at, key])} added`;
    },
  },
  {
    name: 'body.duplicate-key',
    applies: takesJson,
    mutate(context) {
      const body = jsonBody(context.draft);
      const objects = [{ at: [] as Segments, value: body.value }, ...locations(body.value)].filter((location) => isObject(location.value));
      if (objects.length === 0) return undefined;
      const { at, value } = context.random.pick(objects);
      const key = context.random.pick([...Object.keys(value as object), 'fuzz']);
      const marker = `\u0002fuzz-duplicate\u0002`;
      setAt(body.value, [...at, marker], 'x');
      // The key written again at the end of its object, twice (so that a key the object lacks is
      // duplicated too), with a value of another type.
      const other = JSON.stringify(context.random.pick(WRONG_TYPES));
      const text = encodeJson(body).replace(`${JSON.stringify(marker)}:"x"`, () => `${JSON.stringify(key)}:${other},${JSON.stringify(key)}:${other}`);
      context.draft.body = { kind: 'raw', bytes: text };
      return `${pointerOf([...at, key])} written more than once`;
    },
  },
  {
    name: 'body.huge-string',
    applies: takesJson,
    mutate(context) {
      const location = target(context, (value) => typeof value === 'string');
      const body = jsonBody(context.draft);
      setAt(body.value, location.at, '');
      const unit = context.random.pick(['a', 'é', '\u{1F600}', '\\', ' ']);
      const unitBytes = Buffer.byteLength(JSON.stringify(unit)) - 2;
      const size = context.random.pick(['70 KB', 'just under the limit', 'just over the limit', '2 MiB'] as const);
      const targetBytes = {
        '70 KB': 70_000,
        'just under the limit': BODY_LIMIT_BYTES - 16,
        'just over the limit': BODY_LIMIT_BYTES + 16,
        '2 MiB': 2 * BODY_LIMIT_BYTES,
      }[size];
      const count = Math.max(1, Math.floor((targetBytes - byteLength(body.value)) / unitBytes));
      setAt(body.value, location.at, unit.repeat(count));
      return `${pointerOf(location.at)} = ${count} × ${JSON.stringify(unit)} (${size})`;
    },
  },
  {
    name: 'body.huge-array',
    applies: takesJson,
    mutate(context) {
      const location = target(context, Array.isArray);
      const body = jsonBody(context.draft);
      setAt(body.value, location.at, []);
      const item = Array.isArray(location.value) && location.value.length > 0 ? location.value[0] : context.random.pick<unknown>([1, 'x', {}, [], null]);
      const itemBytes = byteLength(item) + 1;
      const size = context.random.pick(['10,000 items', 'just under the limit', 'just over the limit'] as const);
      const count =
        size === '10,000 items'
          ? 10_000
          : Math.max(1, Math.floor((BODY_LIMIT_BYTES + (size === 'just over the limit' ? 64 : -64) - byteLength(body.value)) / itemBytes));
      setAt(
        body.value,
        location.at,
        Array.from({ length: count }, () => item),
      );
      return `${pointerOf(location.at)} = ${count} × ${JSON.stringify(item)} (${size})`;
    },
  },
  {
    name: 'body.deep',
    applies: takesJson,
    mutate(context) {
      const location = target(context);
      const depth = context.random.pick([31, 32, 33, 100, 10_000, 400_000]);
      const literal = context.random.chance(0.5) ? '['.repeat(depth) + '1' + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
      setLiteral(context, location.at, literal);
      return `${pointerOf(location.at)} nested ${depth} levels deep`;
    },
  },
  {
    name: 'body.nul',
    applies: takesJson,
    mutate(context) {
      const body = jsonBody(context.draft);
      if (context.random.chance(0.3) && isObject(body.value)) {
        const key = stringWith(context.random, '\u0000');
        body.value[key] = 'x';
        return `a key ${JSON.stringify(key)}`;
      }
      const location = target(context, (value) => typeof value === 'string');
      const value = stringWith(context.random, '\u0000');
      setAt(body.value, location.at, value);
      return `${pointerOf(location.at)} = ${JSON.stringify(value)}`;
    },
  },
  {
    name: 'body.lone-surrogate',
    applies: takesJson,
    mutate(context) {
      const location = target(context, (value) => typeof value === 'string');
      const body = jsonBody(context.draft);
      if (context.random.chance(0.5)) {
        const value = stringWith(context.random, context.random.pick(['\ud800', '\udc00', '\udbff\udbff', '\udfff\ud800']));
        // JSON.stringify writes a lone surrogate as a \u escape: the JSON is valid, the string is not Unicode.
        if (context.random.chance(0.3) && isObject(body.value)) {
          body.value[value] = 'x';
          return `a key ${JSON.stringify(value)}`;
        }
        setAt(body.value, location.at, value);
        return `${pointerOf(location.at)} = ${JSON.stringify(value)}`;
      }
      // The same in the bytes themselves: a string holding sequences that are not UTF-8.
      const marker = '\u0002fuzz-bytes\u0002';
      setAt(body.value, location.at, `a${marker}b`);
      const bytes = context.random.pick(INVALID_UTF8);
      const [before, after] = encodeJson(body).split(JSON.stringify(marker).slice(1, -1));
      context.draft.body = { kind: 'raw', bytes: Buffer.concat([Buffer.from(before ?? ''), Buffer.from(bytes), Buffer.from(after ?? '')]) };
      return `${pointerOf(location.at)} holds the bytes ${bytes.map((byte) => byte.toString(16)).join(' ')}, which are not UTF-8`;
    },
  },
  {
    name: 'body.number',
    applies: takesJson,
    mutate(context) {
      const location = target(context, (value) => typeof value === 'number');
      if (context.random.chance(0.6)) {
        const literal = context.random.pick(NUMBER_LITERALS);
        setLiteral(context, location.at, literal);
        return `${pointerOf(location.at)} = ${literal}`;
      }
      const value = context.random.pick(NUMBERISH_STRINGS);
      setAt(jsonBody(context.draft).value, location.at, value);
      return `${pointerOf(location.at)} = ${JSON.stringify(value)}`;
    },
  },
  {
    name: 'body.malformed',
    applies: takesBody,
    mutate(context) {
      const text = context.random.pick(MALFORMED_BODIES);
      context.draft.body = { kind: 'raw', bytes: text };
      context.draft.contentType = JSON_TYPE;
      return `body ${JSON.stringify(text.slice(0, 20))} as JSON`;
    },
  },
  {
    name: 'content-type',
    applies: takesBody,
    mutate(context) {
      const contentType = context.random.pick(CONTENT_TYPES);
      const body = context.draft.body;
      const text = body?.kind === 'json' ? encodeJson(body) : body?.kind === 'raw' ? body.bytes : '{}';
      const utf16 = /utf-16/i.test(contentType ?? '') && typeof text === 'string' && context.random.chance(0.5);
      context.draft.body = { kind: 'raw', bytes: utf16 ? Buffer.from(text, 'utf16le') : text };
      context.draft.contentType = contentType;
      return `Content-Type ${contentType === undefined ? 'left out' : JSON.stringify(contentType)}${utf16 ? ', body in UTF-16' : ''}`;
    },
  },
  {
    name: 'path.id',
    applies: hasPathParams,
    mutate(context) {
      const parameter = context.random.pick(context.operation.pathParams);
      const [what, value] = context.random.pick(idVariants(context.world, idPrefixOf(parameter.schema), context.random));
      context.draft.pathValues[parameter.name] = encodeURIComponent(value);
      return `{${parameter.name}} = ${what}: ${truncate(context.draft.pathValues[parameter.name]!)}`;
    },
  },
  {
    name: 'body.foreign-id',
    applies: (operation) => takesJson(operation) && operation.body !== undefined,
    mutate(context) {
      const schema = context.operation.body?.schema;
      const ids = locations(jsonBody(context.draft).value).filter(({ at }) => idPrefixOf(schemaAt(schema, at) ?? {}) !== undefined);
      if (ids.length === 0) return undefined;
      const { at } = context.random.pick(ids);
      // The ones that look right: what the server must look up, and refuse, by itself.
      const [what, value] = context.random.pick(idVariants(context.world, idPrefixOf(schemaAt(schema, at)!), context.random).slice(0, 3));
      setAt(jsonBody(context.draft).value, at, value);
      return `${pointerOf(at)} = ${what}: ${value}`;
    },
  },
  {
    name: 'path.traversal',
    applies: hasPathParams,
    mutate(context) {
      const parameter = context.random.pick(context.operation.pathParams);
      const id = context.draft.pathValues[parameter.name] ?? '';
      const value = context.random.pick([
        '..%2F..%2Fv1%2Fidentity',
        '..%2f..%2fhealthz',
        '%2e%2e',
        '%2E%2E',
        '.%2E',
        '%2e%2e%2f%2e%2e%2fv1%2Fapi-keys',
        '..',
        '.',
        '%2e',
        '..%5C..%5C',
        '%2F',
        'a%2Fb',
        `${id}%2F..%2F..`,
        `..%2F${id}`,
        '..%252F..%252F',
        '%252e%252e',
        '....%2F%2F',
        '%5C',
        '~',
        '%3F',
        '%23',
        '%3B',
      ]);
      context.draft.pathValues[parameter.name] = value;
      return `{${parameter.name}} = ${value}`;
    },
  },
  {
    // URLs the router cannot decode (a bad percent-escape) and ids past its default maxParamLength:
    // server.ts sends them through the hooks, so they are answered and charged like any request.
    name: 'path.unparseable',
    applies: hasPathParams,
    mutate(context) {
      const parameter = context.random.pick(context.operation.pathParams);
      const value = context.random.pick([
        '%C0%AF',
        '%00',
        `${context.draft.pathValues[parameter.name] ?? ''}%00`,
        'x'.repeat(10_000),
        'A'.repeat(300),
        '%',
        '%zz',
        '%E0%A4%A',
        '%FF%FE',
        '%ED%A0%80',
      ]);
      context.draft.pathValues[parameter.name] = value;
      return `{${parameter.name}} = ${truncate(value)}`;
    },
  },
  {
    name: 'query.wrong-type',
    applies: hasQueryParams,
    mutate(context) {
      const parameter = context.random.pick(context.operation.queryParams);
      const value = context.random.pick([
        'abc',
        '-1',
        '0',
        '101',
        '1.5',
        '1e309',
        'NaN',
        '',
        'true',
        '%00',
        '%C0%AF',
        '%zz',
        'x'.repeat(1000),
        '%7B%7D',
        '%5B%5D',
        '2026-13-45T99%3A99%3A99Z',
        '-0',
        '9007199254740993',
      ]);
      replaceQuery(context.draft, parameter.name, [`${parameter.name}=${value}`]);
      return `?${parameter.name}=${truncate(value)}`;
    },
  },
  {
    name: 'query.array',
    applies: hasQueryParams,
    mutate(context) {
      const parameter = context.random.pick(context.operation.queryParams);
      const value = encodeURIComponent(sampleString(parameter.schema, context.world, context.random, parameter.name));
      const name = parameter.name;
      const forms = [
        [`${name}=${value}`, `${name}=${value}`],
        [`${name}[]=${value}`],
        [`${name}[]=${value}`, `${name}[]=${value}`],
        [`${name}[0]=${value}`],
        [`${name}[a]=${value}`],
        [`${name}[][]=${value}`],
        [`${name}=${value}%2C${value}`],
        Array.from({ length: 200 }, () => `${name}=${value}`),
      ];
      const pairs = context.random.pick(forms);
      replaceQuery(context.draft, name, pairs);
      return `?${truncate(pairs.slice(0, 2).join('&'))}${pairs.length > 2 ? ` (${pairs.length} times)` : ''}`;
    },
  },
  {
    name: 'query.unknown',
    applies: () => true,
    mutate(context) {
      const pair = context.random.pick([
        'colour=blue',
        '__proto__=x',
        '__proto__[admin]=true',
        'constructor[prototype][admin]=true',
        'a[b][c][d][e]=f',
        '=x',
        'x=',
        '&&&',
        '%00=x',
        'x%00=1',
        'hasOwnProperty=1',
        'toString=1',
        `${'k'.repeat(2000)}=1`,
        Array.from({ length: 1000 }, (_, index) => `p${index}=1`).join('&'),
      ]);
      context.draft.query.push(pair);
      return `?${truncate(pair)}`;
    },
  },
  {
    name: 'query.cursor',
    applies: (operation) => cursorsOf(operation).length > 0,
    mutate(context) {
      const { world, random } = context;
      const cursors = cursorsOf(context.operation);
      const parameter = random.pick(cursors);
      const anyOwn = Object.values(world.ids).flat();
      const anyOther = Object.values(world.otherIds).flat();
      const options: [string, () => string[]][] = [
        [
          'garbage',
          () => [
            `${parameter.name}=${random.pick(['garbage', 'null', 'undefined', '0', '-1', '%00', '%C0%AF', '%zz', 'x'.repeat(64), 'x'.repeat(65), '%F0%9F%98%80'])}`,
          ],
        ],
        ['an id of this organization, of any kind', () => [`${parameter.name}=${anyOwn.length > 0 ? random.pick(anyOwn) : unknownId('x', random)}`]],
        ['an id of another organization', () => [`${parameter.name}=${anyOther.length > 0 ? random.pick(anyOther) : unknownId('x', random)}`]],
        ['a well-formed id that names nothing', () => [`${parameter.name}=${unknownId(random.pick(Object.keys(world.ids).concat('x')), random)}`]],
        ['both cursors', () => cursors.map((cursor) => `${cursor.name}=${anyOwn.length > 0 ? random.pick(anyOwn) : 'x'}`)],
        ['empty', () => [`${parameter.name}=`]],
        ['a cursor with filters', () => [`${parameter.name}=${anyOwn.length > 0 ? random.pick(anyOwn) : 'x'}`, 'limit=1', 'order=asc']],
      ];
      const [what, make] = random.pick(options);
      const pairs = make();
      for (const pair of pairs) replaceQuery(context.draft, pair.split('=')[0]!, []);
      context.draft.query.push(...pairs);
      return `${what}: ?${truncate(pairs.join('&'))}`;
    },
  },
  {
    name: 'query.expand',
    applies: (operation) => operation.method === 'GET',
    mutate(context) {
      const value = context.random.pick([
        'x',
        '__proto__',
        'constructor',
        'connection.organization',
        '*',
        ',,,',
        '%00',
        'connection%00',
        Array.from({ length: 60 }, (_, index) => `r${index}`).join(','),
        'connection,connection,connection',
        'a'.repeat(300),
        '%C0%AF',
      ]);
      const name = context.random.pick(['expand[]', 'expand', 'expand[0]', 'expand[][]']);
      const pairs = context.random.chance(0.3) ? [`${name}=${value}`, `${name}=connection`] : [`${name}=${value}`];
      replaceQuery(context.draft, 'expand', []);
      context.draft.query.push(...pairs);
      return `?${truncate(pairs.join('&'))}`;
    },
  },
  {
    name: 'header.idempotency-key',
    applies: (operation) => operation.idempotencyKey !== undefined,
    mutate(context) {
      const value = context.random.pick([undefined, '', ' ', 'x'.repeat(256), 'x'.repeat(8000), 'clé', 'a, b', '\t', 'reused-key']);
      if (value === undefined) delete context.draft.headers['idempotency-key'];
      else context.draft.headers['idempotency-key'] = value;
      return `Idempotency-Key ${value === undefined ? 'left out' : JSON.stringify(truncate(value))}`;
    },
  },
];

/** The names of every mutation family, for reports. */
export const FAMILY_NAMES = FAMILIES.map((family) => family.name);

/** Ids that are not the one a place asks for, well-formed ones first: labelled, as sent (before any percent-encoding). */
function idVariants(world: World, prefix: string | undefined, random: Random): [string, string][] {
  const kind = prefix ?? 'x';
  const others = Object.keys(world.ids).filter((other) => other !== prefix && world.ids[other]!.length > 0);
  const otherOrganization = world.otherIds[kind] ?? Object.values(world.otherIds).flat();
  return [
    ['an id of another kind', ownId(world, others.length > 0 ? random.pick(others) : 'zzz', random)],
    ['an id of another organization', otherOrganization.length > 0 ? random.pick(otherOrganization) : unknownId(kind, random)],
    ['an id that names nothing', unknownId(kind, random)],
    ['a lower-case id', ownId(world, kind, random).toLowerCase()],
    ['an id cut short', ownId(world, kind, random).slice(0, -1)],
    ['an id one character too long', ownId(world, kind, random) + 'Z'],
    ['an id with an excluded letter', `${kind}_${'U'.repeat(26)}`],
    ['a bare prefix', `${kind}_`],
    ['a number', String(random.int(1_000_000))],
    ['a quote', `' OR 1=1 --`],
    ['non-ASCII', random.pick(['ñ', '\u{1F600}', 'ı', 'ﬃ', '\u200b'])],
    ['an id and a percent-encoded slash', encodeURIComponent(`${ownId(world, kind, random)}/x`)],
  ];
}

function replaceQuery(draft: Draft, name: string, pairs: string[]): void {
  draft.query = draft.query.filter((pair) => pair.split('=')[0] !== name).concat(pairs);
}

function truncate(text: string, length = 80): string {
  return text.length <= length ? text : `${text.slice(0, length)}… (${text.length} characters)`;
}

/** The unmutated request: path parameters of real records, a few valid query parameters, a sampled body. */
function baseline(operation: Operation, world: World, random: Random, index: number): Draft {
  const pathValues: Record<string, string> = {};
  for (const parameter of operation.pathParams) pathValues[parameter.name] = encodeURIComponent(sampleString(parameter.schema, world, random, parameter.name));
  const query: string[] = [];
  for (const parameter of operation.queryParams) {
    if (CURSOR_NAMES.includes(parameter.name) || !(parameter.required || random.chance(0.25))) continue;
    query.push(`${parameter.name}=${encodeURIComponent(sampleString(parameter.schema, world, random, parameter.name))}`);
  }
  const headers: Record<string, string> = {};
  if (operation.idempotencyKey === 'required' || (operation.idempotencyKey === 'optional' && random.chance(0.3))) {
    // Mostly a fresh key; sometimes one used before on this operation, with another body.
    headers['idempotency-key'] = random.chance(0.2) ? `fuzz-reused-${random.int(3)}` : `fuzz-${index}-${random.int(1_000_000_000)}`;
  }
  let body: Body | undefined;
  let contentType: string | undefined;
  if (operation.body?.contentType === JSON_TYPE) {
    body = { kind: 'json', value: sample(operation.body.schema, world, random), literals: new Map() };
    contentType = JSON_TYPE;
  } else if (operation.body?.contentType.startsWith('multipart/form-data')) {
    const boundary = `fuzz${random.int(1_000_000)}`;
    const bytes = [
      `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{"fuzz":"yes"}\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="fuzz.jpg"\r\nContent-Type: image/jpeg\r\n\r\n\xff\xd8\xff\xe0fuzz\r\n`,
      `--${boundary}--\r\n`,
    ].join('');
    body = { kind: 'raw', bytes };
    contentType = `multipart/form-data; boundary=${boundary}`;
  }
  return { pathValues, query, body, contentType, headers };
}

function encode(operation: Operation, draft: Draft): Pick<FuzzCase, 'path' | 'headers' | 'body'> {
  const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => draft.pathValues[name] ?? '');
  const headers = { ...draft.headers };
  if (draft.contentType !== undefined) headers['content-type'] = draft.contentType;
  const body = draft.body === undefined ? undefined : draft.body.kind === 'json' ? encodeJson(draft.body) : draft.body.bytes;
  return { path: draft.query.length > 0 ? `${path}?${draft.query.join('&')}` : path, headers, body };
}

/** The credential a case is sent with: an organization key where the operation takes one, a dashboard token for a sample. */
function credentialFor(operation: Operation, random: Random): Credential {
  const accepted = operation.credentials;
  if (!accepted) return 'none';
  if (accepted.includes('dashboard_token') && random.chance(0.25)) return 'dashboard_token';
  if (accepted.includes('organization_key')) return 'organization_key';
  return accepted[0] ?? 'none';
}

/** The `count` cases of one operation for `seed`: the same every time for the same seed, operation and world. */
export function casesFor(operation: Operation, world: World, seed: number, count: number): FuzzCase[] {
  const random = streamOf(seed, operation.key);
  const families = random.shuffle(FAMILIES.filter((family) => family.applies(operation)));
  const cases: FuzzCase[] = [];
  for (let index = 0; index < count && families.length > 0; index++) {
    for (let attempt = 0; attempt < families.length; attempt++) {
      const family = families[(index + attempt) % families.length]!;
      const draft = baseline(operation, world, random, index);
      const note = family.mutate({ operation, world, random, draft });
      if (note === undefined) continue;
      cases.push({
        operation,
        index,
        family: family.name,
        note,
        credential: credentialFor(operation, random),
        method: operation.method,
        ...encode(operation, draft),
      });
      break;
    }
  }
  return cases;
}
