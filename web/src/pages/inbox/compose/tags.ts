import { MAX_TAGS, TAG_PATTERN } from '../../../../../src/modules/conversations/tags.schemas.ts';

/*
 * The API's own tag rule (a schema file with no imports, so bundling it brings nothing else). The
 * API checks every tag again: this only saves a round trip and says why at once.
 */

const tag = new RegExp(TAG_PATTERN);

/** Why a tag cannot be added to a conversation that has `existing`, or null when it can. */
export function tagProblem(candidate: string, existing: readonly string[]): string | null {
  if (candidate === '') return 'Type a tag first.';
  if (!tag.test(candidate)) return 'A tag is 1 to 50 lowercase letters, digits, “-”, “_” or “:” (like billing:late).';
  if (existing.includes(candidate)) return 'The conversation has this tag already.';
  if (existing.length >= MAX_TAGS) return `A conversation has at most ${MAX_TAGS} tags: remove one first.`;
  return null;
}
