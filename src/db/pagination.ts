import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import { invalidParam } from '../lib/errors.ts';
import { compileOnce } from './compiled-query.ts';
import type { Db } from './connect.ts';
import type { Dialect } from './dialect.ts';
import type { Database } from './schema.ts';

/**
 * Cursor paging on the primary key. Ids sort by creation, so `order by id` is `order by time`, and
 * each page is one range scan on the (organization_id, id) index: page 4,000 costs what page 1 does.
 */
export interface PageRequest {
  limit: number;
  after?: string | undefined;
  before?: string | undefined;
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  order: 'asc' | 'desc';
}

export interface Page<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

type Row = { id: string };

/**
 * Runs `query` (already scoped to the tenant and the caller's filters) for one page. A cursor must be
 * the id of an item that query can see: another resource's or another organization's id is refused,
 * never answered with an empty page.
 */
export async function paginate<DB, TB extends keyof DB, O extends Row>(
  query: SelectQueryBuilder<DB, TB, O>,
  columns: { id: string; createdAt: string },
  page: PageRequest,
): Promise<Page<O>> {
  // Kysely cannot type a column reference passed in as a string; the store names real columns.
  /* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment */
  const id = columns.id as any;
  const createdAt = columns.createdAt as any;
  const cursor = page.after ?? page.before;
  if (cursor !== undefined) {
    const found = await query.clearSelect().select(id).where(id, '=', cursor).executeTakeFirst();
    if (!found) throw invalidParam(page.after !== undefined ? '/query/after' : '/query/before', 'is not a cursor of this list');
  }

  let scoped = query;
  if (page.createdAfter !== undefined) scoped = scoped.where(createdAt, '>', page.createdAfter);
  if (page.createdBefore !== undefined) scoped = scoped.where(createdAt, '<', page.createdBefore);

  // Walking backwards (`before`) reads in the opposite direction, then restores list order.
  const backwards = page.before !== undefined;
  const ascending = (page.order === 'asc') !== backwards;
  if (cursor !== undefined) scoped = scoped.where(id, ascending ? '>' : '<', cursor);
  const rows = (await scoped
    .orderBy(id, ascending ? 'asc' : 'desc')
    .limit(page.limit + 1)
    .execute()) as O[];
  /* eslint-enable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment */
  return toPage(rows, page);
}

function toPage<O extends Row>(rows: O[], page: PageRequest): Page<O> {
  const backwards = page.before !== undefined;
  const hasMore = rows.length > page.limit;
  const data = rows.slice(0, page.limit);
  if (backwards) data.reverse();
  const edge = backwards ? data[0] : data[data.length - 1];
  return { object: 'list', data, has_more: hasMore, next_cursor: hasMore && edge ? edge.id : null };
}

/** What a paged site's `build` returns: the list's query, scoped to the tenant and the caller's filters. */
export type PagedBuild<P, TB extends keyof Database, O extends Row> = (db: Db, params: P, dialect: Dialect) => SelectQueryBuilder<Database, TB, O>;

/**
 * `paginate` over a compiled site (`compileOnce`, db/compiled-query.ts): `build` gives the list's
 * scoped query, built once per shape (which filters are present, which direction, cursor or not);
 * each call runs the cached SQL with its values. The same rules as `paginate`: a cursor must be an id
 * the list can see.
 *
 * With `key`, the list is ordered by that expression first (an inbox by its latest activity), the
 * id breaking ties so that the order is total and stable. The cursor is still an item's id, as
 * everywhere: its key is read with it, and the page continues strictly past (key, id) with a
 * row-value comparison, which PostgreSQL and SQLite both evaluate. `created_after`/`created_before`
 * keep filtering on creation either way.
 */
export function compiledPaging<P extends object, TB extends keyof Database, O extends Row>(
  build: PagedBuild<P, TB, O>,
  columns: { id: string; createdAt: string; key?: RawBuilder<string> },
): (db: Db, params: P, page: PageRequest) => Promise<Page<O>> {
  // Kysely cannot type a column reference passed in as a string; the store names real columns.
  /* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment */
  const id = columns.id as any;
  const createdAt = columns.createdAt as any;
  const key = columns.key;
  const cursorOf = compileOnce((db, p: { list: P; cursor: string }, dialect) =>
    build(db, p.list, dialect)
      .clearSelect()
      .select(key ? [id, key.as('sort_key')] : [id])
      .where(id, '=', p.cursor),
  );
  interface PageParams {
    list: P;
    createdAfter: string | undefined;
    createdBefore: string | undefined;
    cursor: { id: string; key: string | undefined } | undefined;
    /** A boolean, so that the direction is part of the shape. */
    ascending: boolean;
    limit: number;
  }
  const rowsOf = compileOnce((db, p: PageParams, dialect) => {
    let query = build(db, p.list, dialect);
    if (p.createdAfter !== undefined) query = query.where(createdAt, '>', p.createdAfter);
    if (p.createdBefore !== undefined) query = query.where(createdAt, '<', p.createdBefore);
    const direction = p.ascending ? 'asc' : 'desc';
    if (!key) {
      if (p.cursor !== undefined) query = query.where(id, p.ascending ? '>' : '<', p.cursor.id);
      return query.orderBy(id, direction).limit(p.limit);
    }
    if (p.cursor !== undefined) {
      const { key: after, id: afterId } = p.cursor;
      query = query.where(
        p.ascending
          ? sql<boolean>`(${key}, ${sql.ref(columns.id)}) > (${after}, ${afterId})`
          : sql<boolean>`(${key}, ${sql.ref(columns.id)}) < (${after}, ${afterId})`,
      );
    }
    return query.orderBy(key, direction).orderBy(id, direction).limit(p.limit);
  });
  /* eslint-enable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment */

  return async (db, list, page) => {
    const cursorId = page.after ?? page.before;
    let cursor: PageParams['cursor'];
    if (cursorId !== undefined) {
      const found = (await cursorOf.first(db, { list, cursor: cursorId })) as { sort_key?: string } | undefined;
      if (!found) throw invalidParam(page.after !== undefined ? '/query/after' : '/query/before', 'is not a cursor of this list');
      cursor = { id: cursorId, key: found.sort_key };
    }
    const ascending = (page.order === 'asc') !== (page.before !== undefined);
    const rows = await rowsOf.all(db, { list, createdAfter: page.createdAfter, createdBefore: page.createdBefore, cursor, ascending, limit: page.limit + 1 });
    return toPage(rows as O[], page);
  };
}

export function mapPage<T, U>(page: Page<T>, map: (item: T) => U): Page<U> {
  return { ...page, data: page.data.map(map) };
}
