import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { EventsTable } from '../../db/schema.ts';

// Every query reads the `events_organization (organization_id, id)` index as a range.
const findRow = compileOnce((db, p: { organizationId: string; id: string }) =>
  db.selectFrom('events').select('id').where('organization_id', '=', p.organizationId).where('id', '=', p.id),
);
const latestRow = compileOnce((db, p: { organizationId: string }) =>
  db.selectFrom('events').select('id').where('organization_id', '=', p.organizationId).orderBy('id', 'desc').limit(1),
);
const rowsAfter = compileOnce((db, p: { organizationIds: string[]; after: string; limit: number }) =>
  db.selectFrom('events').selectAll().where('organization_id', 'in', p.organizationIds).where('id', '>', p.after).orderBy('id').limit(p.limit),
);

export function createStreamStore() {
  return {
    async exists(db: Db, organizationId: string, id: string): Promise<boolean> {
      return (await findRow.first(db, { organizationId, id })) !== undefined;
    },
    async latestId(db: Db, organizationId: string): Promise<string | undefined> {
      return (await latestRow.first(db, { organizationId }))?.id;
    },
    /** The events of these organizations after `after`, in id order: a resume's replay, and each poll of the open streams. */
    eventsAfter(db: Db, organizationIds: string[], after: string, limit: number): Promise<EventsTable[]> {
      return rowsAfter.all(db, { organizationIds, after, limit });
    },
  };
}

export type StreamStore = ReturnType<typeof createStreamStore>;
