import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { compiledPaging, paginate, type PageRequest } from '../../db/pagination.ts';
import type { ContactConsentsTable, ContactsTable } from '../../db/schema.ts';

export type ContactChanges = Partial<Omit<ContactsTable, 'id' | 'organization_id' | 'phone_number' | 'created_at'>>;

/** The organization's contacts that are not deleted: every read of the API starts here. */
const live = (db: Db, organizationId: string) =>
  db.selectFrom('contacts').selectAll().where('organization_id', '=', organizationId).where('deleted_at', 'is', null);

// Compiled once per shape (db/compiled-query.ts): sends, inbound messages and the conversations'
// `expand` read contacts all the time.
const findLive = compileOnce((db, p: { organizationId: string; id: string }) => live(db, p.organizationId).where('id', '=', p.id));
const findByPhoneNumber = compileOnce((db, p: { organizationId: string; phoneNumber: string }) =>
  live(db, p.organizationId).where('phone_number', '=', p.phoneNumber),
);
const findMany = compileOnce((db, p: { organizationId: string; ids: readonly string[] }) => live(db, p.organizationId).where('id', 'in', p.ids));
/*
 * The locking reads hold a live contact's row until the transaction ends (`dialect.lockRows`: `for no
 * key update` on PostgreSQL, which re-reads the row after waiting, so a contact deleted or merged away
 * meanwhile no longer matches; SQLite's writing transactions hold the write lock from `begin
 * immediate`), so that two changes of one contact, such as two consent records, apply one after the other.
 */
const lockLive = compileOnce((db, p: { organizationId: string; id: string }, dialect) => dialect.lockRows(live(db, p.organizationId).where('id', '=', p.id)));
const lockByPhoneNumber = compileOnce((db, p: { organizationId: string; phoneNumber: string }, dialect) =>
  dialect.lockRows(live(db, p.organizationId).where('phone_number', '=', p.phoneNumber)),
);
const insertIfAbsent = compileOnce((db, row: ContactsTable) =>
  db
    .insertInto('contacts')
    .values(row)
    // The target names the partial unique index, predicate included, as both backends require.
    .onConflict((conflict) => conflict.columns(['organization_id', 'phone_number']).where('deleted_at', 'is', null).doNothing()),
);
const listPage = compiledPaging(
  (db, p: { organizationId: string; phoneNumber: string | undefined }) => {
    const query = live(db, p.organizationId);
    return p.phoneNumber === undefined ? query : query.where('phone_number', '=', p.phoneNumber);
  },
  { id: 'id', createdAt: 'created_at' },
);
const lastDeleted = compileOnce((db, p: { organizationId: string; phoneNumber: string }) =>
  db
    .selectFrom('contacts')
    .selectAll()
    .where('organization_id', '=', p.organizationId)
    .where('phone_number', '=', p.phoneNumber)
    .where('deleted_at', 'is not', null)
    .orderBy('deleted_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1),
);
const updateRow = compileOnce((db, p: { id: string; changes: ContactChanges }) => db.updateTable('contacts').set(p.changes).where('id', '=', p.id));

export function createContactsStore() {
  return {
    find(db: Db, organizationId: string, id: string): Promise<ContactsTable | undefined> {
      return findLive.first(db, { organizationId, id });
    },
    findByPhoneNumber(db: Db, organizationId: string, phoneNumber: string): Promise<ContactsTable | undefined> {
      return findByPhoneNumber.first(db, { organizationId, phoneNumber });
    },
    /** Live contacts by id or by number, for many recipients at once (a batch): a query per 500 of each. */
    async findLiveAmong(db: Db, organizationId: string, among: { ids: readonly string[]; phoneNumbers: readonly string[] }): Promise<ContactsTable[]> {
      const rows: ContactsTable[] = [];
      for (const [column, values] of [
        ['id', among.ids],
        ['phone_number', among.phoneNumbers],
      ] as const) {
        for (let start = 0; start < values.length; start += 500) {
          rows.push(
            ...(await live(db, organizationId)
              .where(column, 'in', values.slice(start, start + 500))
              .execute()),
          );
        }
      }
      return rows;
    },
    findMany(db: Db, organizationId: string, ids: readonly string[]): Promise<ContactsTable[]> {
      return findMany.all(db, { organizationId, ids });
    },
    /** The number's most recently deleted contact, if any. */
    findLastDeleted(db: Db, organizationId: string, phoneNumber: string): Promise<ContactsTable | undefined> {
      return lastDeleted.first(db, { organizationId, phoneNumber });
    },
    /** Reads a live contact and holds its row until the transaction ends (see `lockLive`). */
    lock(db: Db, organizationId: string, id: string): Promise<ContactsTable | undefined> {
      return lockLive.first(db, { organizationId, id });
    },
    /**
     * The number's live contact, locked as `lock` does. A contact deleted (or merged away) while this
     * waited for its lock is not returned: PostgreSQL re-reads the row and it no longer matches.
     */
    lockByPhoneNumber(db: Db, organizationId: string, phoneNumber: string): Promise<ContactsTable | undefined> {
      return lockByPhoneNumber.first(db, { organizationId, phoneNumber });
    },
    /** Inserts unless a live contact has the number; answers whether this call inserted it. */
    async insertIfAbsent(db: Db, row: ContactsTable): Promise<boolean> {
      return (await insertIfAbsent.run(db, row)) > 0;
    },
    async update(db: Db, id: string, changes: ContactChanges): Promise<void> {
      await updateRow.run(db, { id, changes });
    },
    list(db: Db, organizationId: string, filters: { phoneNumber?: string | undefined }, page: PageRequest) {
      return listPage(db, { organizationId, phoneNumber: filters.phoneNumber }, page);
    },

    async insertConsent(db: Db, row: ContactConsentsTable): Promise<void> {
      await db.insertInto('contact_consents').values(row).execute();
    },
    /** Hands every consent record of one contact to another (a merge); answers how many moved. */
    async moveConsents(db: Db, fromContactId: string, toContactId: string): Promise<number> {
      const result = await db.updateTable('contact_consents').set({ contact_id: toContactId }).where('contact_id', '=', fromContactId).executeTakeFirst();
      return Number(result.numUpdatedRows);
    },
    /** The record that decides a topic's status: the latest by `recorded_at`, the later one on a tie. */
    findLatestConsent(db: Db, contactId: string, topic: string): Promise<ContactConsentsTable | undefined> {
      return db
        .selectFrom('contact_consents')
        .selectAll()
        .where('contact_id', '=', contactId)
        .where('topic', '=', topic)
        .orderBy('recorded_at', 'desc')
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
    },
    listConsents(db: Db, contactId: string, page: PageRequest) {
      return paginate(db.selectFrom('contact_consents').selectAll().where('contact_id', '=', contactId), { id: 'id', createdAt: 'created_at' }, page);
    },
  };
}

export type ContactsStore = ReturnType<typeof createContactsStore>;
