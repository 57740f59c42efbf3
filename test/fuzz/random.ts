/**
 * The fuzz's only source of randomness: a seeded PRNG (mulberry32), so that a seed names one run
 * exactly. Each operation draws from a stream of its own, derived from the seed and its name, so
 * that running one operation alone (`--only`) generates the very cases it got in the whole run.
 */
export interface Random {
  /** An integer in [0, below). */
  int(below: number): number;
  pick<T>(items: readonly T[]): T;
  shuffle<T>(items: readonly T[]): T[];
  chance(probability: number): boolean;
}

export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (below: number) => Math.floor(next() * below);
  return {
    int,
    pick: (items) => {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[int(items.length)]!;
    },
    shuffle: (items) => {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy;
    },
    chance: (probability) => next() < probability,
  };
}

/** The stream of one named part of a run (FNV-1a of the name, mixed into the seed). */
export function streamOf(seed: number, name: string): Random {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return createRandom((seed ^ hash) >>> 0);
}

/** A fresh seed for a run that was given none. */
export function randomSeed(): number {
  return Math.floor(Math.random() * 4294967296) >>> 0;
}
