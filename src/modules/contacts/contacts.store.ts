import type { Db } from '../../db/connect.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { ContactConsentsTable, ContactsTable } from '../../db/schema.ts';

export type ContactChanges = Partial<Omit<ContactsTable, 'id' | 'organization_id' | 'phone_number' | 'created_at'>>;

export function createContactsStore() {
  /** The organization's contacts that are not deleted: every read of the API starts here. */
  const live = (db: Db, organizationId: string) =>
    db.selectFrom('contacts').selectAll().where('organization_id', '=', organizationId).where('deleted_at', 'is', null);
  const lockLive = (db: Db, organizationId: string) =>
    db
      .updateTable('contacts')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('organization_id', '=', organizationId)
      .where('deleted_at', 'is', null);
  return {
    find(db: Db, organizationId: string, id: string): Promise<ContactsTable | undefined> {
      return live(db, organizationId).where('id', '=', id).executeTakeFirst();
    },
    findByPhoneNumber(db: Db, organizationId: string, phoneNumber: string): Promise<ContactsTable | undefined> {
      return live(db, organizationId).where('phone_number', '=', phoneNumber).executeTakeFirst();
    },
    findMany(db: Db, organizationId: string, ids: readonly string[]): Promise<ContactsTable[]> {
      return live(db, organizationId).where('id', 'in', ids).execute();
    },
    /** The number's most recently deleted contact, if any. */
    findLastDeleted(db: Db, organizationId: string, phoneNumber: string): Promise<ContactsTable | undefined> {
      return db
        .selectFrom('contacts')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .where('phone_number', '=', phoneNumber)
        .where('deleted_at', 'is not', null)
        .orderBy('deleted_at', 'desc')
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
    },
    /**
     * Reads a live contact and holds its row until the transaction ends (a no-op update takes the
     * row lock on PostgreSQL; SQLite's writers are serialised anyway), so that two changes of one
     * contact, such as two consent records, are applied one after the other.
     */
    lock(db: Db, organizationId: string, id: string): Promise<ContactsTable | undefined> {
      return lockLive(db, organizationId).where('id', '=', id).returningAll().executeTakeFirst();
    },
    /**
     * The number's live contact, locked as `lock` does. A contact deleted (or merged away) while this
     * waited for its lock is not returned: PostgreSQL re-reads the row and it no longer matches.
     */
    lockByPhoneNumber(db: Db, organizationId: string, phoneNumber: string): Promise<ContactsTable | undefined> {
      return lockLive(db, organizationId).where('phone_number', '=', phoneNumber).returningAll().executeTakeFirst();
    },
    /** Inserts unless a live contact has the number; answers whether this call inserted it. */
    async insertIfAbsent(db: Db, row: ContactsTable): Promise<boolean> {
      const result = await db
        .insertInto('contacts')
        .values(row)
        // The target names the partial unique index, predicate included, as both backends require.
        .onConflict((conflict) => conflict.columns(['organization_id', 'phone_number']).where('deleted_at', 'is', null).doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    async update(db: Db, id: string, changes: ContactChanges): Promise<void> {
      await db.updateTable('contacts').set(changes).where('id', '=', id).execute();
    },
    list(db: Db, organizationId: string, filters: { phoneNumber?: string | undefined }, page: PageRequest) {
      let query = live(db, organizationId);
      if (filters.phoneNumber !== undefined) query = query.where('phone_number', '=', filters.phoneNumber);
      return paginate(query, { id: 'id', createdAt: 'created_at' }, page);
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
