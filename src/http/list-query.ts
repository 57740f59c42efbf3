import type { PageRequest } from '../db/pagination.ts';
import { invalidParam } from '../lib/errors.ts';

/** The list query parameters every list endpoint accepts, turned into a page request for its store. */
export interface ListQueryInput {
  limit?: number;
  after?: string;
  before?: string;
  created_after?: string;
  created_before?: string;
  order?: 'asc' | 'desc';
}

/** Checks the rules a schema cannot: exclusive cursors, an ordered time range. */
export function toPageRequest(query: ListQueryInput): PageRequest {
  if (query.after !== undefined && query.before !== undefined) {
    throw invalidParam('/query/before', 'cannot be combined with after');
  }
  const createdAfter = query.created_after === undefined ? undefined : new Date(query.created_after).toISOString();
  const createdBefore = query.created_before === undefined ? undefined : new Date(query.created_before).toISOString();
  if (createdAfter !== undefined && createdBefore !== undefined && createdAfter >= createdBefore) {
    throw invalidParam('/query/created_before', 'must be later than created_after');
  }
  return { limit: query.limit ?? 25, after: query.after, before: query.before, createdAfter, createdBefore, order: query.order ?? 'desc' };
}
