import type { SelectQueryBuilder } from 'kysely';
import { invalidParam } from '../lib/errors.ts';

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

  const hasMore = rows.length > page.limit;
  const data = rows.slice(0, page.limit);
  if (backwards) data.reverse();
  const edge = backwards ? data[0] : data[data.length - 1];
  return { object: 'list', data, has_more: hasMore, next_cursor: hasMore && edge ? edge.id : null };
}

export function mapPage<T, U>(page: Page<T>, map: (item: T) => U): Page<U> {
  return { ...page, data: page.data.map(map) };
}
