import {
  createQueryId,
  PostgresAdapter,
  SqliteAdapter,
  type Compilable,
  type CompiledQuery,
  type DialectAdapter,
  type Kysely,
  type QueryResult,
  type RootOperationNode,
} from 'kysely';
import { postgresDialect, sqliteDialect, type Dialect } from './dialect.ts';
import type { Database } from './schema.ts';

/**
 * A query built by Kysely once per shape and dialect, then run again and again with new values.
 *
 * Building a query with Kysely (immutable nodes, one copy per `.where`) and compiling it to SQL cost
 * 5–25 µs each (a look-up by key 5–8, a 25-id `in` list 23, measured), on every call, for SQL that
 * never changes: a third to a half of what a hot query cost in all. A site made with `compileOnce(build)` runs `build` the first time it meets a
 * shape, with every string and number of the parameters replaced by a marker object of this module;
 * it compiles that query, notes at which position of the SQL's parameters each marker landed, and
 * keeps the SQL. Every later call of the same shape only puts its values at those positions. Kysely
 * stays the one source of truth for the SQL on both backends, and a value is never spliced into the
 * SQL text: the cache knows positions, not values, so no value (however much it looks like a
 * placeholder) can be mistaken for another or for SQL.
 *
 * The shape is everything that changes the SQL text, read from the parameters themselves:
 * - which parameters are `undefined` (an optional filter), `null`, `true`/`false`, `''` or `0`
 *   (passed to `build` as themselves, so `if (p.filter !== undefined)`, `p.test ? 1 : 0` and truthiness
 *   tests build the right query);
 * - the length of every array (`in (?, ?, ?)` has one placeholder per item);
 * - the keys of every plain object (an insert's columns, an update's `set`).
 * Any other string or number reaches `build` as a marker, so `build` must not branch on it: a
 * comparison such as `p.order === 'asc'` would see a marker. A value that changes the SQL is passed as
 * a boolean instead (`ascending: page.order === 'asc'`). A marker that does not reach the SQL's
 * parameters (because `build` compared it, or computed `p.limit + 1` from it) makes the first call
 * throw, so such a mistake fails every test that runs the query rather than returning wrong rows.
 *
 * Shapes are cached per dialect (told by the handle's adapter), at most `MAX_SHAPES` per site, oldest out.
 * A call first tries the few shapes its site met last by matching its parameters against their
 * structure, and makes the key only when none fits; the query then runs on the handle's connection
 * provider rather than through `db.executeQuery`. Both only save allocations (a key string per call,
 * Kysely's wrappers per query): 11 % of what a webhooks run allocates, and 2–6 % of a conversations
 * page's CPU (docs/benchmarks.md, sixteenth pass).
 * A handle with Kysely plugins (none in this service) is built and compiled on every call, as
 * plugins may rewrite the query per call.
 */
const MAX_SHAPES = 256;

/** Shapes a site tries by their structure before making a key: most sites have one or two. */
const RECENT_SHAPES = 16;

/** Stands in for one value while the query is built. Module-private: no caller can make one. */
class Marker {
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }
}

interface Shape {
  sql: string;
  query: RootOperationNode;
  /** For each SQL parameter: the index of the value among the call's leaves, or -1 for a constant. */
  slots: Int32Array;
  /** The constants the query itself carries (`'disconnected'`, a `0`/`1` derived from a boolean). */
  constants: unknown[];
  /** The parameters' structure, to recognise a later call of this shape without making its key. */
  pattern: Pattern;
}

/**
 * The structure `walk` describes as a key, as a tree a call's parameters are matched against: a
 * value kept as itself (`undefined`, `null`, a boolean, `''`, `0`), a leaf (a marker's place), an
 * array of so many items, or a plain object of these keys in this order.
 */
type Pattern =
  | { readonly kind: 'same'; readonly value: unknown }
  | { readonly kind: 'leaf' }
  | { readonly kind: 'array'; readonly items: readonly Pattern[] }
  | { readonly kind: 'object'; readonly keys: readonly string[]; readonly values: readonly Pattern[] };

const LEAF: Pattern = { kind: 'leaf' };

function patternOf(value: unknown): Pattern {
  switch (kindOf(value)) {
    case 'same':
      return { kind: 'same', value };
    case 'array':
      return { kind: 'array', items: (value as unknown[]).map(patternOf) };
    case 'object': {
      const keys: string[] = [];
      const values: Pattern[] = [];
      for (const name in value as object) {
        keys.push(name);
        values.push(patternOf((value as Record<string, unknown>)[name]));
      }
      return { kind: 'object', keys, values };
    }
    case 'leaf':
      return LEAF;
  }
}

/**
 * Whether `value` has the structure of `pattern` (exactly what would give it the same key), pushing
 * its leaves onto `leaves` in `walk`'s order. It allocates nothing else: a multi-row insert's key is
 * a string as long as its column names times its rows, made and dropped on every call.
 */
function matches(value: unknown, pattern: Pattern, leaves: unknown[]): boolean {
  if (kindOf(value) !== pattern.kind) return false;
  switch (pattern.kind) {
    case 'same':
      return value === pattern.value;
    case 'leaf':
      leaves.push(value);
      return true;
    case 'array': {
      const { items } = pattern;
      if ((value as unknown[]).length !== items.length) return false;
      for (let index = 0; index < items.length; index++) if (!matches((value as unknown[])[index], items[index]!, leaves)) return false;
      return true;
    }
    case 'object': {
      const { keys, values } = pattern;
      let index = 0;
      for (const name in value as object) {
        if (index === keys.length || name !== keys[index]) return false;
        if (!matches((value as Record<string, unknown>)[name], values[index]!, leaves)) return false;
        index++;
      }
      return index === keys.length;
    }
  }
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Whether a value is passed to `build` as itself (part of the shape) rather than as a marker. */
function isShapeValue(value: unknown): boolean {
  return value === undefined || value === null || typeof value === 'boolean' || value === '' || value === 0;
}

/**
 * How the parameters' walkers (`walk`, `withMarkers`, `patternOf`, `matches`) treat a value, decided
 * here once so that they cannot disagree: a shape value, an array, a plain object, or a leaf.
 */
function kindOf(value: unknown): Pattern['kind'] {
  if (isShapeValue(value)) return 'same';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object' && value !== null && isPlainObject(value)) return 'object';
  return 'leaf';
}

/**
 * Walks the parameters in one fixed order (object keys in their order, array items in theirs) and
 * answers the shape's key; `leaf` receives every value that becomes a marker, in that order.
 */
function walk(value: unknown, leaf: (value: unknown) => void): string {
  switch (kindOf(value)) {
    case 'same':
      return value === undefined ? 'u' : value === null ? 'n' : value === '' ? 'e' : value === 0 ? 'z' : value ? 't' : 'f';
    case 'array': {
      let key = '[';
      for (const item of value as unknown[]) key += walk(item, leaf) + ',';
      return key + ']';
    }
    case 'object': {
      let key = '{';
      // Length-prefixed, so that no key (however it is spelt) reads as the end of another.
      for (const name in value as object) key += name.length + ':' + name + walk((value as Record<string, unknown>)[name], leaf) + ',';
      return key + '}';
    }
    case 'leaf':
      leaf(value);
      return 'v';
  }
}

/** The parameters as `build` sees them: the same structure, each leaf value a marker. */
function withMarkers(value: unknown, next: { index: number }): unknown {
  switch (kindOf(value)) {
    case 'same':
      return value;
    case 'array':
      return (value as unknown[]).map((item) => withMarkers(item, next));
    case 'object': {
      const copy: Record<string, unknown> = {};
      for (const name in value as object) copy[name] = withMarkers((value as Record<string, unknown>)[name], next);
      return copy;
    }
    case 'leaf':
      return new Marker(next.index++);
  }
}

function dialectOf(adapter: DialectAdapter): Dialect {
  if (adapter instanceof SqliteAdapter) return sqliteDialect;
  if (adapter instanceof PostgresAdapter) return postgresDialect;
  throw new Error(`compileOnce: no dialect for the adapter ${adapter.constructor.name}`);
}

/** `DB`: the tables the site's handle is typed by (the service's own by default; the sandbox's have theirs). */
export interface CompiledSite<P, O, DB = Database> {
  /** Every row. */
  all(db: Kysely<DB>, params: P): Promise<O[]>;
  /** The first row, if any (like `executeTakeFirst`: add a `limit` where more may match). */
  first(db: Kysely<DB>, params: P): Promise<O | undefined>;
  /** A write without `returning`: how many rows it inserted, updated or deleted. */
  run(db: Kysely<DB>, params: P): Promise<number>;
}

export type Build<P, O, DB = Database> = (db: Kysely<DB>, params: P, dialect: Dialect) => Compilable<O>;

/**
 * A query site compiled once per shape: `build` receives the parameters with markers in place of
 * their values (see above) and the dialect; the site's calls take the real values.
 */
export function compileOnce<P extends object, O, DB = Database>(build: Build<P, O, DB>): CompiledSite<P, O, DB> {
  const perDialect = new Map<Dialect, Map<string, Shape>>();

  function compileShape(db: Kysely<DB>, params: P, dialect: Dialect): Shape {
    const markers = withMarkers(params, { index: 0 }) as P;
    const compiled = build(db, markers, dialect).compile();
    const used = new Set<number>();
    const slots = new Int32Array(compiled.parameters.length);
    const constants: unknown[] = [];
    compiled.parameters.forEach((parameter, position) => {
      if (parameter instanceof Marker) {
        slots[position] = parameter.index;
        used.add(parameter.index);
      } else {
        slots[position] = -1;
      }
      constants.push(parameter instanceof Marker ? undefined : parameter);
    });
    let count = 0;
    walk(params, () => count++);
    for (let index = 0; index < count; index++) {
      if (!used.has(index)) {
        throw new Error(
          `compileOnce: parameter value #${index} does not reach the query's parameters; build must not branch on or compute from a string or number (pass a boolean instead)`,
        );
      }
    }
    return { sql: compiled.sql, query: compiled.query, slots, constants, pattern: patternOf(params) };
  }

  /** The shapes met most recently, newest first: a call tries these before making its key. */
  const recentPerDialect = new Map<Dialect, Shape[]>();

  /** The call's shape and its leaves: one of the recent shapes, else found or compiled by its key. */
  function shapeFor(db: Kysely<DB>, params: P, dialect: Dialect, leaves: unknown[]): Shape {
    let recent = recentPerDialect.get(dialect);
    if (!recent) recentPerDialect.set(dialect, (recent = []));
    for (let index = 0; index < recent.length; index++) {
      const shape = recent[index]!;
      if (matches(params, shape.pattern, leaves)) {
        // To the front, in place: a site alternating between two shapes does this on every call.
        for (let at = index; at > 0; at--) recent[at] = recent[at - 1]!;
        recent[0] = shape;
        return shape;
      }
      leaves.length = 0;
    }
    const key = walk(params, (value) => leaves.push(value));
    let shapes = perDialect.get(dialect);
    if (!shapes) perDialect.set(dialect, (shapes = new Map<string, Shape>()));
    let shape = shapes.get(key);
    if (!shape) {
      shape = compileShape(db, params, dialect);
      if (shapes.size >= MAX_SHAPES) shapes.delete(shapes.keys().next().value!);
      shapes.set(key, shape);
    }
    recent.unshift(shape);
    if (recent.length > RECENT_SHAPES) recent.pop();
    return shape;
  }

  async function execute(db: Kysely<DB>, params: P): Promise<QueryResult<O>> {
    // `getExecutor()` is marked internal in Kysely's types; it is the one way to tell a handle's
    // dialect and plugins, and the tests (run on both backends) would catch a change of it.
    const executor = db.getExecutor();
    const adapter = executor.adapter;
    const dialect = dialectOf(adapter);
    if (executor.plugins.length > 0) return db.executeQuery(build(db, params, dialect));

    const leaves: unknown[] = [];
    const { sql, query, slots, constants } = shapeFor(db, params, dialect, leaves);
    const parameters = new Array<unknown>(slots.length);
    for (let position = 0; position < slots.length; position++) {
      const slot = slots[position]!;
      parameters[position] = slot < 0 ? constants[position] : leaves[slot];
    }
    const compiled: CompiledQuery<O> = { sql, query, parameters, queryId: createQueryId() };
    // What `db.executeQuery` does for a handle without plugins, without its wrappers: on a
    // transaction it makes a new executor for every query, and each wrapper is a promise of its
    // own, about a kilobyte a query that the worker's settles and claims paid thousands of times a
    // second (measured). The handle's connection provider is the same, so a transaction still
    // checks it is open and runs its queries one at a time.
    return executor.provideConnection((connection) => connection.executeQuery<O>(compiled));
  }

  return {
    async all(db, params) {
      return (await execute(db, params)).rows;
    },
    async first(db, params) {
      return (await execute(db, params)).rows[0];
    },
    async run(db, params) {
      return Number((await execute(db, params)).numAffectedRows ?? 0n);
    },
  };
}
