import Type, { type Static, type TProperties, type TSchema } from 'typebox';
import { idPattern, type IdKind } from '../lib/ids.ts';
import type { StoredJson } from '../lib/stored-json.ts';
import { METADATA_MAX_KEYS } from '../lib/metadata.ts';

/** Schema building blocks shared by every resource. */

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC timestamp.' });

export function Id(kind: IdKind, description?: string) {
  return Type.String({ pattern: idPattern(kind), ...(description ? { description } : {}) });
}

export function Nullable<T extends TSchema>(schema: T, options: { description?: string } = {}) {
  return Type.Union([schema, Type.Null()], options);
}

/**
 * `metadata` is the one open object of the API: any keys, stored and echoed back, never sent to the
 * provider. Bounded so that one resource cannot carry an unbounded blob.
 */
export { METADATA_MAX_KEYS };

// TypeBox renders a Record's key schema as `patternProperties: {"^.*$": …}`, which drops the key's
// maxLength; `propertyNames` states it where Ajv will enforce it.
export const Metadata = Type.Record(Type.String(), Type.Unknown(), {
  maxProperties: METADATA_MAX_KEYS,
  propertyNames: { maxLength: 40 },
  description: 'Your own key/value data: up to 50 keys of at most 40 characters. Stored and echoed back; never sent to the provider.',
});

/** `metadata` in a `PATCH`: merged into what is stored (`mergeMetadata`), a key set to null removed. */
export const MetadataPatch = Type.Record(Type.String(), Type.Unknown(), {
  maxProperties: METADATA_MAX_KEYS,
  propertyNames: { maxLength: 40 },
  description: 'Merged into the stored metadata; a key set to null is removed.',
});

/** The schema key that marks a value the serializer writes verbatim from its stored text (`http/stored-json.ts`). */
export const STORED_JSON_KEYWORD = 'x-stored-json';

/**
 * A field whose value is returned exactly as stored (JSON text): on the wire and in the OpenAPI
 * document it is `schema`; in the service it is a `StoredJson` whose text the serializer splices in.
 */
export function StoredJsonOf<T extends TSchema>(schema: T) {
  return Type.Unsafe<StoredJson<Static<T>>>({ ...schema, [STORED_JSON_KEYWORD]: true });
}

export const PathId = (kind: IdKind) => Type.Object({ id: Id(kind) }, { additionalProperties: false });

/**
 * A union told apart by one property (`type`, a header's `format`). Validation then reports only the
 * errors of the member that property names, where a plain union reports every member's, the first
 * of them beside the point (`/components/1/format is required` for a bad buttons component).
 */
export function Discriminated<const M extends Record<string, TSchema>>(key: string, members: M, options: { description?: string } = {}) {
  const values = Object.keys(members);
  return Type.Unsafe<Static<M[keyof M]>>({
    ...options,
    type: 'object',
    required: [key],
    properties: { [key]: { enum: values } },
    allOf: values.map((value) => ({ if: { type: 'object', required: [key], properties: { [key]: { const: value } } }, then: members[value] })),
  });
}

/** An object schema that rejects unknown keys, which is every request schema of the API. */
export function Strict<T extends TProperties>(properties: T, options: { description?: string } = {}) {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

export const ListQueryProperties = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'Page size, 1 to 100.' })),
  after: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Return the items that follow this id in list order.' })),
  before: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Return the items that precede this id in list order.' })),
  created_after: Type.Optional(Type.String({ format: 'date-time', description: 'Only items created strictly after this ISO 8601 time.' })),
  created_before: Type.Optional(Type.String({ format: 'date-time', description: 'Only items created strictly before this ISO 8601 time.' })),
  order: Type.Optional(Type.Union([Type.Literal('desc'), Type.Literal('asc')], { default: 'desc', description: 'desc (newest first, the default) or asc.' })),
};

export function ListQuery<T extends TProperties>(filters: T = {} as T) {
  return Strict({ ...ListQueryProperties, ...filters });
}

export function ListOf<T extends TSchema>(item: T) {
  return Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    has_more: Type.Boolean(),
    next_cursor: Nullable(Type.String()),
  });
}

export const DeletedResponse = (object: string) => Type.Object({ id: Type.String(), object: Type.Literal(object), deleted: Type.Literal(true) });

/** `expand=a,b`: at most this many relations, each one of the endpoint's own (see expand.ts). */
export const MAX_EXPANSIONS = 4;

export function ExpandParameter(relations: readonly string[]) {
  return Type.Optional(
    Type.String({
      maxLength: 200,
      description: `Comma-separated relations to embed (at most ${MAX_EXPANSIONS}): ${relations.join(', ')}.`,
    }),
  );
}
