import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { UsersTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { RecentReads } from '../../lib/recent-reads.ts';
import type { Role } from '../credentials/scopes.schemas.ts';
import type { Member } from './members.schemas.ts';
import type { MemberRow, MembersStore } from './members.store.ts';

function toMember(row: MemberRow): Member {
  return {
    id: row.id,
    object: 'member',
    organization_id: row.organization_id,
    email: row.email,
    name: row.name,
    role: row.role as Role,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Emails compare without case or surrounding space: one person, one account. */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * The member behind a dashboard token is read on every request; it is remembered for a second.
 * Every write of a member in this service forgets it at once, so a role change or a removal takes
 * effect on the member's next request here, and within a second in other processes.
 */
export const MEMBER_CACHE_TTL_MS = 1000;
const MEMBER_CACHE_MAX = 10_000;

export function createMembersService(deps: { db: Db; store: MembersStore; clock: Clock; isUniqueViolation: (error: unknown) => boolean }) {
  const { db, store, clock, isUniqueViolation } = deps;
  const recent = new RecentReads<Member>({ clock, ttlMs: MEMBER_CACHE_TTL_MS, maxEntries: MEMBER_CACHE_MAX });
  const memberTags = (member: Member) => [member.id];
  const findRecent = (organizationId: string, id: string) =>
    recent.read(
      `${organizationId}/${id}`,
      async () => {
        const row = await store.find(db, organizationId, id);
        return row ? toMember(row) : undefined;
      },
      memberTags,
    );

  return {
    /** Creates the person and their first membership; runs inside the caller's transaction. */
    async createUserAndMember(
      trx: Trx,
      input: { email: string; name: string | null; passwordHash: string; organizationId: string; role: Role },
    ): Promise<Member> {
      const now = clock.now();
      const timestamp = now.toISOString();
      const email = normaliseEmail(input.email);
      const user: UsersTable = {
        id: newId('user', now.getTime()),
        email,
        name: input.name,
        password_hash: input.passwordHash,
        created_at: timestamp,
        updated_at: timestamp,
      };
      try {
        await store.insertUser(trx, user);
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('resource_exists', 'An account with this email already exists; log in instead.', { param: '/email' });
        throw error;
      }
      const member = {
        id: newId('member', now.getTime()),
        organization_id: input.organizationId,
        user_id: user.id,
        role: input.role,
        created_at: timestamp,
        updated_at: timestamp,
      };
      await store.insertMember(trx, member);
      return toMember({ ...member, email, name: input.name });
    },

    /**
     * Makes an existing person a member of another organization, in the caller's transaction (an
     * accepted invite). A person is a member of an organization once: a second time is a conflict.
     */
    async addMember(trx: Trx, input: { organizationId: string; userId: string; role: Role }): Promise<Member> {
      const now = clock.now();
      const timestamp = now.toISOString();
      const member = {
        id: newId('member', now.getTime()),
        organization_id: input.organizationId,
        user_id: input.userId,
        role: input.role,
        created_at: timestamp,
        updated_at: timestamp,
      };
      try {
        await store.insertMember(trx, member);
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('resource_exists', 'This person is already a member of the organization.');
        throw error;
      }
      const row = await store.find(trx, input.organizationId, member.id);
      return toMember(row!);
    },

    /** The member of `organizationId` with this email, if that person belongs to it. */
    async findByEmail(executor: Db, organizationId: string, email: string): Promise<Member | undefined> {
      const row = await store.findByEmail(executor, organizationId, normaliseEmail(email));
      return row ? toMember(row) : undefined;
    },

    /** The person behind a member (their user id), for checks across organizations. */
    async userIdOf(executor: Db, organizationId: string, id: string): Promise<string | undefined> {
      return (await store.find(executor, organizationId, id))?.user_id;
    },

    /** The person behind an email, with their password hash: for logging in only. */
    findUserByEmail(email: string): Promise<UsersTable | undefined> {
      return store.findUserByEmail(db, normaliseEmail(email));
    },

    async listMembershipsOfUser(userId: string): Promise<Member[]> {
      return (await store.listForUser(db, userId)).map(toMember);
    },

    /** The owners' addresses, read on the caller's transaction (it may be inside one). */
    async ownerEmails(executor: Db, organizationId: string): Promise<string[]> {
      return (await store.ownerEmails(executor, organizationId)).map((row) => row.email);
    },

    /** `executor`: a caller's transaction, whose connection a read must share on SQLite. */
    async find(organizationId: string, id: string, executor: Db = db): Promise<Member | undefined> {
      const row = await store.find(executor, organizationId, id);
      return row ? toMember(row) : undefined;
    },

    /**
     * The member a credential acts as, for authenticating a request: possibly a second old when
     * another process changed it (see MEMBER_CACHE_TTL_MS). Never inside a transaction.
     */
    findForCredential(organizationId: string, id: string): Promise<Member | undefined> {
      return findRecent(organizationId, id);
    },

    /**
     * Sets a member's role, in the caller's transaction: the write a role change is made of (who
     * may grant which role is the caller's rule). The member's cached record is forgotten at once.
     */
    async setRole(trx: Trx, organizationId: string, id: string, role: Role): Promise<Member> {
      if (!(await store.updateRole(trx, organizationId, id, role, clock.now().toISOString()))) throw notFound('member');
      recent.forget(id);
      const row = await store.find(trx, organizationId, id);
      if (!row) throw notFound('member');
      return toMember(row);
    },

    async get(organizationId: string, id: string): Promise<Member> {
      const row = await store.find(db, organizationId, id);
      if (!row) throw notFound('member');
      return toMember(row);
    },

    async list(organizationId: string, filters: { role?: Role | undefined }, page: PageRequest): Promise<Page<Member>> {
      return mapPage(await store.list(db, organizationId, filters, page), toMember);
    },
  };
}

export type MembersService = ReturnType<typeof createMembersService>;
