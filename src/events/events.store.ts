import type { Db } from '../db/connect.ts';
import type { EventsTable } from '../db/schema.ts';

export function createEventsStore() {
  return {
    async insert(db: Db, row: EventsTable): Promise<void> {
      await db.insertInto('events').values(row).execute();
    },
    find(db: Db, organizationId: string, id: string): Promise<EventsTable | undefined> {
      return db.selectFrom('events').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    },
  };
}

export type EventsStore = ReturnType<typeof createEventsStore>;
