import type { Db } from '../../db/connect.ts';
import type { ContactsTable } from '../../db/schema.ts';

export function createContactsStore() {
  return {
    findByPhoneNumber(db: Db, organizationId: string, phoneNumber: string): Promise<ContactsTable | undefined> {
      return db.selectFrom('contacts').selectAll().where('organization_id', '=', organizationId).where('phone_number', '=', phoneNumber).executeTakeFirst();
    },
    /** Inserts unless the phone number is taken; answers whether this call inserted it. */
    async insertIfAbsent(db: Db, row: ContactsTable): Promise<boolean> {
      const result = await db.insertInto('contacts').values(row).onConflict((conflict) => conflict.columns(['organization_id', 'phone_number']).doNothing()).executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
    },
    async update(db: Db, id: string, changes: Partial<Pick<ContactsTable, 'profile_name' | 'last_inbound_at' | 'updated_at'>>): Promise<void> {
      await db.updateTable('contacts').set(changes).where('id', '=', id).execute();
    },
  };
}

export type ContactsStore = ReturnType<typeof createContactsStore>;
