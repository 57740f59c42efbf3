import { sql } from 'kysely';
import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import type { UsageCountersTable, UsageThresholdsTable } from '../../db/schema.ts';

const addToCounter = compileOnce((db, row: UsageCountersTable) =>
  db
    .insertInto('usage_counters')
    .values(row)
    .onConflict((conflict) =>
      conflict
        .columns(['organization_id', 'day', 'meter', 'connection_id', 'automation_id'])
        .doUpdateSet({ quantity: sql<number>`usage_counters.quantity + excluded.quantity` }),
    ),
);

const addToPeriod = compileOnce((db, p: { organizationId: string; period: string; meter: string; quantity: number }) =>
  db
    .insertInto('usage_periods')
    .values({ organization_id: p.organizationId, period: p.period, meter: p.meter, quantity: p.quantity })
    .onConflict((conflict) =>
      conflict.columns(['organization_id', 'period', 'meter']).doUpdateSet({ quantity: sql<number>`usage_periods.quantity + excluded.quantity` }),
    )
    .returning('quantity'),
);

const findPeriod = compileOnce((db, p: { organizationId: string; period: string; meter: string }) =>
  db.selectFrom('usage_periods').select('quantity').where('organization_id', '=', p.organizationId).where('period', '=', p.period).where('meter', '=', p.meter),
);

const listPeriod = compileOnce((db, p: { organizationId: string; period: string }) =>
  db.selectFrom('usage_periods').select(['meter', 'quantity']).where('organization_id', '=', p.organizationId).where('period', '=', p.period),
);

const sumForConnection = compileOnce((db, p: { organizationId: string; connectionId: string; from: string; to: string }) =>
  db
    .selectFrom('usage_counters')
    .select(['meter', (eb) => eb.fn.sum<number>('quantity').as('quantity')])
    .where('organization_id', '=', p.organizationId)
    .where('connection_id', '=', p.connectionId)
    .where('day', '>=', p.from)
    .where('day', '<=', p.to)
    .groupBy('meter'),
);

const insertThreshold = compileOnce((db, row: UsageThresholdsTable) =>
  db
    .insertInto('usage_thresholds')
    .values(row)
    .onConflict((conflict) => conflict.columns(['organization_id', 'period', 'meter', 'connection_id', 'threshold_percent']).doNothing()),
);

/**
 * Records a send to a contact through a number: a new pair is inserted; a known one is moved to now
 * only if its time is older than `refreshBefore` (a write an hour per pair, not one per message).
 * Affects a row exactly when it inserted or moved one.
 */
const touchRecipient = compileOnce((db, p: { organizationId: string; connectionId: string; contactId: string; at: string; refreshBefore: string }) =>
  db
    .insertInto('usage_recipients')
    .values({ organization_id: p.organizationId, connection_id: p.connectionId, contact_id: p.contactId, last_sent_at: p.at })
    .onConflict((conflict) =>
      conflict.columns(['connection_id', 'contact_id']).doUpdateSet({ last_sent_at: p.at }).where('usage_recipients.last_sent_at', '<=', p.refreshBefore),
    ),
);

const countRecipientsSince = compileOnce((db, p: { connectionId: string; since: string }) =>
  db
    .selectFrom('usage_recipients')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('connection_id', '=', p.connectionId)
    .where('last_sent_at', '>', p.since),
);

const countRecipientsOfOrganization = compileOnce((db, p: { organizationId: string; since: string }) =>
  db
    .selectFrom('usage_recipients')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('organization_id', '=', p.organizationId)
    .where('last_sent_at', '>', p.since),
);

const deleteRecipientsBefore = compileOnce((db, p: { before: string }) => db.deleteFrom('usage_recipients').where('last_sent_at', '<', p.before));

/** How a breakdown groups its rows: the counters' column each group is. */
export type BreakdownColumn = 'day' | 'connection_id' | 'meter' | 'automation_id';

export interface BreakdownQuery {
  organizationId: string;
  /** The meters summed (one, or a meter's categories). */
  meters: readonly string[];
  column: BreakdownColumn;
  from: string;
  to: string;
  connectionId: string | undefined;
  /** Keyset paging on the group's value, in ascending order. */
  after: string | undefined;
  limit: number;
}

/** One breakdown site per grouping column: the column is part of the SQL, never a parameter. */
const breakdownSites = new Map<BreakdownColumn, ReturnType<typeof breakdownSite>>();

function breakdownSite(column: BreakdownColumn) {
  return compileOnce(
    (
      db,
      p: {
        organizationId: string;
        meters: readonly string[];
        from: string;
        to: string;
        connectionId: string | undefined;
        after: string | undefined;
        limit: number;
      },
    ) => {
      let query = db
        .selectFrom('usage_counters')
        .select([`${column} as key`, (eb) => eb.fn.sum<number>('quantity').as('quantity')])
        .where('organization_id', '=', p.organizationId)
        .where('meter', 'in', p.meters)
        .where('day', '>=', p.from)
        .where('day', '<=', p.to);
      if (p.connectionId !== undefined) query = query.where('connection_id', '=', p.connectionId);
      if (p.after !== undefined) query = query.where(column, '>', p.after);
      return query.groupBy(column).orderBy(column, 'asc').limit(p.limit);
    },
  );
}

export function createUsageStore() {
  return {
    async addToCounter(db: Db, row: UsageCountersTable): Promise<void> {
      await addToCounter.run(db, row);
    },
    /** Adds to the month's total and answers the total after it. */
    async addToPeriod(db: Db, p: { organizationId: string; period: string; meter: string; quantity: number }): Promise<number> {
      const row = await addToPeriod.first(db, p);
      return Number(row!.quantity);
    },
    async periodQuantity(db: Db, organizationId: string, period: string, meter: string): Promise<number> {
      const row = await findPeriod.first(db, { organizationId, period, meter });
      return row === undefined ? 0 : Number(row.quantity);
    },
    async periodQuantities(db: Db, organizationId: string, period: string): Promise<Map<string, number>> {
      const rows = await listPeriod.all(db, { organizationId, period });
      return new Map(rows.map((row) => [row.meter, Number(row.quantity)]));
    },
    async connectionQuantities(db: Db, p: { organizationId: string; connectionId: string; from: string; to: string }): Promise<Map<string, number>> {
      const rows = await sumForConnection.all(db, p);
      return new Map(rows.map((row) => [row.meter, Number(row.quantity)]));
    },
    /** Answers whether this threshold was reached just now (false: it had been already). */
    async recordThreshold(db: Db, row: UsageThresholdsTable): Promise<boolean> {
      return (await insertThreshold.run(db, row)) > 0;
    },
    /** Answers whether the pair was new or due a refresh (see `touchRecipient`); false for one written to within the hour. */
    async touchRecipient(db: Db, p: { organizationId: string; connectionId: string; contactId: string; at: string; refreshBefore: string }): Promise<boolean> {
      return (await touchRecipient.run(db, p)) > 0;
    },
    async recipientsSince(db: Db, connectionId: string, since: string): Promise<number> {
      return Number((await countRecipientsSince.first(db, { connectionId, since }))?.count ?? 0);
    },
    /** Pairs of (number, contact): a contact written to through two numbers counts against each tier. */
    async recipientsOfOrganizationSince(db: Db, organizationId: string, since: string): Promise<number> {
      return Number((await countRecipientsOfOrganization.first(db, { organizationId, since }))?.count ?? 0);
    },
    async forgetRecipientsBefore(db: Db, before: string): Promise<number> {
      return deleteRecipientsBefore.run(db, { before });
    },
    /** One page of a breakdown, in ascending order of the group's value (`limit` rows at most). */
    async breakdown(db: Db, q: BreakdownQuery): Promise<{ key: string; quantity: number }[]> {
      let site = breakdownSites.get(q.column);
      if (!site) breakdownSites.set(q.column, (site = breakdownSite(q.column)));
      const rows = await site.all(db, {
        organizationId: q.organizationId,
        meters: q.meters,
        from: q.from,
        to: q.to,
        connectionId: q.connectionId,
        after: q.after,
        limit: q.limit,
      });
      return rows.map((row) => ({ key: row.key, quantity: Number(row.quantity) }));
    },
  };
}

export type UsageStore = ReturnType<typeof createUsageStore>;
