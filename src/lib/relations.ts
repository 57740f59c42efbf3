/**
 * Embedding related records into a page of items with one lookup per relation, never one per item:
 * the keys of the whole page are collected first and loaded together.
 */
export interface Relation<T> {
  /** The related record's id on the item, or null when it has none. */
  key: (item: T) => string | null;
  /** Loads every requested id at once; ids that do not resolve are simply absent from the map. */
  load: (ids: string[]) => Promise<Map<string, unknown>>;
}

/**
 * The relations come out in the order `relations` declares them, which is the response schema's:
 * the hot reads write their answers with `JSON.stringify` (http/native-json.ts), which writes an
 * object's fields in the order they were added, whatever order the caller named them in.
 */
export async function embedRelations<T extends object>(items: T[], requested: readonly string[], relations: Record<string, Relation<T>>): Promise<T[]> {
  if (requested.length === 0 || items.length === 0) return items;
  for (const name of requested) if (!Object.hasOwn(relations, name)) throw new Error(`unknown relation ${name}`);
  const loaded = await Promise.all(
    Object.keys(relations)
      .filter((name) => requested.includes(name))
      .map(async (name) => {
        const relation = relations[name]!;
        const ids = [...new Set(items.map(relation.key).filter((id): id is string => id !== null))];
        return [name, relation, ids.length > 0 ? await relation.load(ids) : new Map<string, unknown>()] as const;
      }),
  );
  return items.map((item) => {
    const embedded = { ...item } as Record<string, unknown>;
    for (const [name, relation, records] of loaded) {
      const id = relation.key(item);
      embedded[name] = id === null ? null : (records.get(id) ?? null);
    }
    return embedded as T;
  });
}
