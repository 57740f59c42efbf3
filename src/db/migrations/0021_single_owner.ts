import { sql, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Every organization has exactly one owner: two transfers committing at once cannot make two. */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createIndex('members_one_owner')
    .on('members')
    .column('organization_id')
    .unique()
    .where(sql<boolean>`role = 'owner'`)
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('members_one_owner').execute();
}
