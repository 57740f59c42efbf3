import { compileOnce } from '../db/compiled-query.ts';
import type { Db } from '../db/connect.ts';
import type { EventsTable } from '../db/schema.ts';

// Compiled once (db/compiled-query.ts): every change that emits an event inserts one.
const insertRow = compileOnce((db, row: EventsTable) => db.insertInto('events').values(row));
const findRow = compileOnce((db, p: { organizationId: string; id: string }) =>
  db.selectFrom('events').selectAll().where('organization_id', '=', p.organizationId).where('id', '=', p.id),
);

export function createEventsStore() {
  return {
    async insert(db: Db, row: EventsTable): Promise<void> {
      await insertRow.run(db, row);
    },
    find(db: Db, organizationId: string, id: string): Promise<EventsTable | undefined> {
      return findRow.first(db, { organizationId, id });
    },
  };
}

export type EventsStore = ReturnType<typeof createEventsStore>;
