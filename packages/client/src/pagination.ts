/**
 * Walking a list by its cursors (docs/api-conventions.md#lists): each page's `next_cursor` goes
 * back as `after`, or as `before` when the walk started with `before`, until `has_more` is false.
 * Nothing is fetched until the walk starts, and each page only when the previous one is used up.
 */
import type { Page } from './types.ts';

/** The query parameters a list's cursors go in, from the operation table. */
export interface CursorParameters {
  after: string | null;
  before: string | null;
}

type Query = Record<string, unknown>;

export class Paginator<T, P extends Page<T> = Page<T>> implements AsyncIterable<T> {
  readonly #fetchPage: (query: Query) => Promise<P>;
  readonly #query: Query;
  readonly #cursors: CursorParameters;

  constructor(fetchPage: (query: Query) => Promise<P>, query: Query, cursors: CursorParameters) {
    this.#fetchPage = fetchPage;
    this.#query = query;
    this.#cursors = cursors;
  }

  /** Whether the walk started with `before`, and so goes on with `before`: towards the start of the list. */
  get #backward(): boolean {
    return this.#cursors.before !== null && this.#query[this.#cursors.before] !== undefined;
  }

  /** Every page in turn, the first one included, each as the API answers it (its items in list order). */
  async *pages(): AsyncGenerator<P, void, undefined> {
    const parameter = this.#backward ? this.#cursors.before : this.#cursors.after;
    let query = this.#query;
    for (;;) {
      const page = await this.#fetchPage(query);
      yield page;
      if (!page.has_more || page.next_cursor === null) return;
      if (parameter === null) throw new Error('this list says it has more, but takes no cursor to ask for it');
      query = { ...query, [parameter]: page.next_cursor };
    }
  }

  /**
   * Every item of every page: `for await (const message of client.messages.list())`. A walk with
   * `before` comes back towards the start of the list, so its items come nearest the cursor first:
   * each page's items reversed, as the pages themselves are met in reverse.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    const backward = this.#backward;
    for await (const page of this.pages()) yield* backward ? [...page.data].reverse() : page.data;
  }

  /** The first page only, as the API answers it. */
  async firstPage(): Promise<P> {
    for await (const page of this.pages()) return page;
    throw new Error('unreachable: the first page is always fetched');
  }

  /** The items as an array, at most `max` of them (fetching only the pages needed). */
  async toArray(options: { max?: number } = {}): Promise<T[]> {
    const max = options.max ?? Infinity;
    const items: T[] = [];
    if (max <= 0) return items;
    for await (const item of this) {
      items.push(item);
      if (items.length >= max) break;
    }
    return items;
  }
}
