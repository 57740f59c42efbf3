import { compileOnce } from '../../db/compiled-query.ts';
import type { Db } from '../../db/connect.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { MembersTable, UsersTable } from '../../db/schema.ts';

const MEMBER_COLUMNS = [
  'members.id',
  'members.organization_id',
  'members.user_id',
  'members.role',
  'members.created_at',
  'members.updated_at',
  'users.email',
  'users.name',
] as const;

export type MemberRow = MembersTable & Pick<UsersTable, 'email' | 'name'>;

const joined = (db: Db) => db.selectFrom('members').innerJoin('users', 'users.id', 'members.user_id').select(MEMBER_COLUMNS);
// Compiled once (db/compiled-query.ts): every dashboard request reads the token's member.
const byId = compileOnce((db, p: { organizationId: string; id: string }) =>
  joined(db).where('members.organization_id', '=', p.organizationId).where('members.id', '=', p.id),
);

// The role alone, for authentication (every dashboard and OAuth request): one row by key, no join.
const roleById = compileOnce((db, p: { organizationId: string; id: string }) =>
  db.selectFrom('members').select(['id', 'organization_id', 'role']).where('organization_id', '=', p.organizationId).where('id', '=', p.id),
);

// Holds the user's row too (the inner join): nothing else writes a user while its membership changes.
const lockById = compileOnce((db, p: { organizationId: string; id: string }, dialect) =>
  dialect.lockRows(joined(db).where('members.organization_id', '=', p.organizationId).where('members.id', '=', p.id)),
);

export function createMembersStore() {
  return {
    async insertUser(db: Db, row: UsersTable): Promise<void> {
      await db.insertInto('users').values(row).execute();
    },
    async insertMember(db: Db, row: MembersTable): Promise<void> {
      await db.insertInto('members').values(row).execute();
    },
    async updateRole(db: Db, organizationId: string, id: string, role: string, at: string): Promise<boolean> {
      const result = await db
        .updateTable('members')
        .set({ role, updated_at: at })
        .where('organization_id', '=', organizationId)
        .where('id', '=', id)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    findUserByEmail(db: Db, email: string): Promise<UsersTable | undefined> {
      return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
    },
    find(db: Db, organizationId: string, id: string): Promise<MemberRow | undefined> {
      return byId.first(db, { organizationId, id });
    },
    findRole(db: Db, organizationId: string, id: string): Promise<Pick<MembersTable, 'id' | 'organization_id' | 'role'> | undefined> {
      return roleById.first(db, { organizationId, id });
    },
    /** As `find`, the member's row held until the transaction ends (`dialect.lockRows`). */
    lock(db: Db, organizationId: string, id: string): Promise<MemberRow | undefined> {
      return lockById.first(db, { organizationId, id });
    },
    async deleteMember(db: Db, organizationId: string, id: string): Promise<void> {
      await db.deleteFrom('members').where('organization_id', '=', organizationId).where('id', '=', id).execute();
    },
    findUser(db: Db, id: string): Promise<UsersTable | undefined> {
      return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
    },
    findByEmail(db: Db, organizationId: string, email: string): Promise<MemberRow | undefined> {
      return joined(db).where('members.organization_id', '=', organizationId).where('users.email', '=', email).executeTakeFirst();
    },
    /** The user's memberships, oldest first. */
    listForUser(db: Db, userId: string): Promise<MemberRow[]> {
      return joined(db).where('members.user_id', '=', userId).orderBy('members.id', 'asc').execute();
    },
    ownerEmails(db: Db, organizationId: string): Promise<{ email: string }[]> {
      return db
        .selectFrom('members')
        .innerJoin('users', 'users.id', 'members.user_id')
        .select('users.email')
        .where('members.organization_id', '=', organizationId)
        .where('members.role', '=', 'owner')
        .execute();
    },
    list(db: Db, organizationId: string, filters: { role?: string | undefined }, page: PageRequest) {
      let query = joined(db).where('members.organization_id', '=', organizationId);
      if (filters.role !== undefined) query = query.where('members.role', '=', filters.role);
      return paginate(query, { id: 'members.id', createdAt: 'members.created_at' }, page);
    },
  };
}

export type MembersStore = ReturnType<typeof createMembersStore>;
