import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { embedRelations, type Relation } from './relations.ts';

interface Item {
  id: string;
  owner_id: string | null;
}

const items: Item[] = [
  { id: 'a', owner_id: 'u1' },
  { id: 'b', owner_id: null },
  { id: 'c', owner_id: 'gone' },
];

/** Two relations, declared owner first; each load is recorded with the ids it was asked for. */
function relations(loads: string[][]): Record<string, Relation<Item>> {
  return {
    owner: { key: (item) => item.owner_id, load: async (ids) => (loads.push(ids), new Map([['u1', { name: 'Ann' }]])) },
    note: { key: (item) => item.id, load: async (ids) => (loads.push(ids), new Map([['a', 'hi']])) },
  };
}

describe('embedding relations', () => {
  it('loads each relation once for the page, with each id once', async () => {
    const loads: string[][] = [];
    const embedded = await embedRelations(items, ['note', 'owner'], relations(loads));
    assert.deepEqual(loads, [
      ['u1', 'gone'],
      ['a', 'b', 'c'],
    ]);
    assert.deepEqual(embedded.slice(1), [
      { id: 'b', owner_id: null, owner: null, note: null },
      { id: 'c', owner_id: 'gone', owner: null, note: null },
    ]);
  });

  it('writes them in the order they are declared, whatever order they are asked in', async () => {
    for (const requested of [
      ['note', 'owner'],
      ['owner', 'note'],
    ]) {
      const [first] = await embedRelations(items, requested, relations([]));
      assert.equal(JSON.stringify(first), '{"id":"a","owner_id":"u1","owner":{"name":"Ann"},"note":"hi"}');
    }
  });

  it('leaves the items alone when nothing is asked for, and refuses a relation that is not declared', async () => {
    assert.equal(await embedRelations(items, [], relations([])), items);
    await assert.rejects(embedRelations(items, ['owner', 'nope'], relations([])), /unknown relation nope/);
  });
});
