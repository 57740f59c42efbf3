import { TAG_PATTERN } from '../../../../src/modules/conversations/tags.schemas.ts';

/** The inbox's filters in the URL's search params: what `parseInboxSearch` keeps of them. */
export interface InboxSearch {
  state?: 'open' | 'pending' | 'closed';
  /** A member id, `me` (whoever is signed in: a link that means "mine" for everyone) or `none`. */
  assignee?: string;
  tag?: string;
  window?: 'open' | 'closed';
}

const TAG = new RegExp(TAG_PATTERN);

export function parseInboxSearch(search: Record<string, unknown>): InboxSearch {
  const result: InboxSearch = {};
  if (search.state === 'open' || search.state === 'pending' || search.state === 'closed') result.state = search.state;
  if (typeof search.assignee === 'string' && /^(me|none|mem_[0-9A-Za-z]{26})$/.test(search.assignee)) result.assignee = search.assignee;
  if (typeof search.tag === 'string' && TAG.test(search.tag)) result.tag = search.tag;
  if (search.window === 'open' || search.window === 'closed') result.window = search.window;
  return result;
}
