import { invalidParam } from '../lib/errors.ts';
import { MAX_EXPANSIONS } from './schemas.ts';

/**
 * `expand=a,b`: the relations a list or get endpoint can embed. Each endpoint declares its own, so
 * an unknown or nested name is refused with the list of valid ones instead of being ignored.
 */
export function parseExpand(value: string | undefined, relations: readonly string[]): string[] {
  if (value === undefined || value.trim() === '') return [];
  const names = [
    ...new Set(
      value
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== ''),
    ),
  ];
  if (names.length > MAX_EXPANSIONS) throw invalidParam('/query/expand', `may name at most ${MAX_EXPANSIONS} relations`, 'too_many');
  for (const name of names) {
    if (name.includes('.')) throw invalidParam('/query/expand', `cannot expand nested relations (${name})`);
    if (!relations.includes(name)) {
      throw invalidParam('/query/expand', `names an unknown relation ${name}; expandable: ${relations.join(', ') || 'none'}`);
    }
  }
  return names;
}
