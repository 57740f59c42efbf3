import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { UsersTable } from '../../db/schema.ts';
import { MINUTE, type Clock } from '../../lib/clock.ts';
import { verifyPassword } from '../../lib/crypto.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import { outranks, type Role } from '../credentials/scopes.schemas.ts';
import type { Member } from './members.schemas.ts';
import type { MemberRow, MembersStore } from './members.store.ts';

/** What authentication needs of a member: who, where and with which role. */
export type MemberRole = Pick<Member, 'id' | 'organization_id' | 'role'>;

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

/** How long after entering their password an owner may transfer ownership without entering it again. */
export const RECENT_SIGN_IN_MS = 10 * MINUTE;

/**
 * What another module keeps per member (conversations assigned, locks held), undone when the member
 * leaves or is removed: run in the removal's transaction, before the member's row is deleted.
 */
export type MemberRemovalListener = (trx: Trx, member: Member) => Promise<void>;

export interface MembersServiceDeps {
  db: Db;
  store: MembersStore;
  clock: Clock;
  isUniqueViolation: (error: unknown) => boolean;
  audit: Pick<AuditEventsService, 'record'>;
  /** Mail is built on members (it reads the owners' addresses), so members name only the one call they make. */
  mail: { queue(trx: Trx, mail: { organizationId: string | null; to: string; subject: string; text: string }): Promise<string> };
  /** Where mails link to. */
  publicBaseUrl: string;
}

export function createMembersService(deps: MembersServiceDeps) {
  const { db, store, clock, isUniqueViolation, audit, mail } = deps;
  const removalListeners: MemberRemovalListener[] = [];
  /** The member the request acts on, held until the transaction ends; another organization's is not found. */
  async function lockMember(trx: Trx, organizationId: string, id: string): Promise<MemberRow> {
    const row = await store.lock(trx, organizationId, id);
    if (!row) throw notFound('member');
    return row;
  }

  function actingMember(principal: Principal): { id: string; role: Role } {
    if (principal.memberId === null || principal.role === null) {
      throw new AppError('credential_kind_not_allowed', 'Only a member can manage members: use a dashboard token.');
    }
    return { id: principal.memberId, role: principal.role };
  }

  /** The owner is changed only by a transfer; anyone else only by someone who outranks them. */
  function assertMayManage(actor: { id: string; role: Role }, target: MemberRow, action: 'remove' | 'change the role of'): void {
    if (target.role === 'owner') {
      throw new AppError('owner_immutable', `No one can ${action} the owner; transfer ownership first (POST /v1/organization/transfer-ownership).`);
    }
    if (!outranks(actor.role, target.role as Role)) {
      throw new AppError('role_insufficient', `A${actor.role === 'admin' ? 'n' : ''} ${actor.role} cannot ${action} a member who is ${target.role}.`);
    }
  }

  /** Proof that the owner handing over the organization is its owner in person: a recent sign-in or the password. */
  async function assertRecentlySignedIn(principal: Principal, userId: string, password: string | undefined): Promise<void> {
    if (password !== undefined) {
      const user = await store.findUser(db, userId);
      if (!user || !(await verifyPassword(password, user.password_hash))) {
        throw invalidParam('/password', 'is not the password of this account', 'invalid_value');
      }
      return;
    }
    const signedInAt = principal.signedInAt === undefined ? Number.NaN : Date.parse(principal.signedInAt);
    if (!(clock.now().getTime() - signedInAt < RECENT_SIGN_IN_MS)) {
      throw invalidParam(
        '/password',
        `is required: ownership moves only within ${RECENT_SIGN_IN_MS / MINUTE} minutes of signing in, or with the password`,
        'missing',
      );
    }
  }

  const service = {
    /** Modules that keep something per member register here what a removal undoes. */
    onRemoved(listener: MemberRemovalListener): void {
      removalListeners.push(listener);
    },

    /**
     * Changes a member's role. The actor outranks both the member's current role and the one granted
     * (an admin makes agents and viewers of each other, never another admin); the owner's own role
     * changes only by a transfer. Takes effect on the member's next request.
     */
    async changeRole(actor: Actor, id: string, role: Exclude<Role, 'owner'>): Promise<Member> {
      const acting = actingMember(actor.principal);
      return db.transaction().execute(async (trx) => {
        const target = await lockMember(trx, actor.principal.organizationId, id);
        assertMayManage(acting, target, 'change the role of');
        if (!outranks(acting.role, role)) {
          throw new AppError('role_insufficient', `A${acting.role === 'admin' ? 'n' : ''} ${acting.role} grants only roles below their own; ${role} is not.`, {
            param: '/role',
          });
        }
        if (target.role === role) return toMember(target);
        const member = await service.setRole(trx, target.organization_id, target.id, role);
        await audit.record(trx, actor, { action: 'member.role_changed', target: { type: 'member', id }, data: { from: target.role, to: role } });
        return member;
      });
    },

    /**
     * Removes a member (owners and admins, of members they outrank), or lets one leave (`id` is the
     * caller's own). Their sessions end with the
     * membership, what other modules keep for them is undone (listeners), and the organization's
     * keys, which belong to it and not to them, stay. Never the owner.
     */
    async remove(actor: Actor, id: string): Promise<{ id: string; object: 'member'; deleted: true }> {
      const acting = actingMember(actor.principal);
      await db.transaction().execute(async (trx) => {
        const target = await lockMember(trx, actor.principal.organizationId, id);
        const leaving = target.id === acting.id;
        if (leaving && target.role === 'owner') {
          throw new AppError(
            'owner_immutable',
            'The owner cannot leave the organization; transfer ownership first (POST /v1/organization/transfer-ownership).',
          );
        }
        if (!leaving && acting.role !== 'owner' && acting.role !== 'admin') {
          throw new AppError('role_insufficient', 'Only owners and admins remove members; anyone but the owner may leave.');
        }
        if (!leaving) assertMayManage(acting, target, 'remove');
        const member = toMember(target);
        for (const listener of removalListeners) await listener(trx, member);
        // Their dashboard sessions go with the row (on delete cascade).
        await store.deleteMember(trx, target.organization_id, target.id);
        await audit.record(trx, actor, {
          action: leaving ? 'member.left' : 'member.removed',
          target: { type: 'member', id },
          data: { email: target.email, role: target.role },
        });
      });
      return { id, object: 'member', deleted: true };
    },

    /**
     * Hands the organization to another member: the owner becomes an admin and the member the owner,
     * in one transaction, demotion first (a partial unique index holds every organization to one
     * owner, so two transfers at once cannot both land). Both are mailed.
     */
    async transferOwnership(actor: Actor, input: { member_id: string; password?: string | undefined }): Promise<Member> {
      const acting = actingMember(actor.principal);
      const organizationId = actor.principal.organizationId;
      const owner = await store.find(db, organizationId, acting.id);
      if (!owner || owner.role !== 'owner') throw new AppError('role_insufficient', 'Only the owner can transfer ownership.');
      await assertRecentlySignedIn(actor.principal, owner.user_id, input.password);
      return db.transaction().execute(async (trx) => {
        const current = await lockMember(trx, organizationId, acting.id);
        // A transfer that committed meanwhile made the caller an admin.
        if (current.role !== 'owner') throw new AppError('invalid_state', 'You are no longer the owner: ownership was transferred meanwhile.');
        if (input.member_id === acting.id) {
          throw new AppError('invalid_state', 'You are already the owner; name the member who should take over.', { param: '/member_id' });
        }
        const target = await store.lock(trx, organizationId, input.member_id);
        if (!target) throw new AppError('resource_not_found', `No such member: ${input.member_id}.`, { param: '/member_id' });
        const now = clock.now().toISOString();
        await store.updateRole(trx, organizationId, current.id, 'admin', now);
        await store.updateRole(trx, organizationId, target.id, 'owner', now);
        await audit.record(trx, actor, {
          action: 'organization.ownership_transferred',
          target: { type: 'member', id: target.id },
          data: { from_member_id: current.id, to_member_id: target.id, previous_role: target.role },
        });
        const link = `${deps.publicBaseUrl}/dashboard/members`;
        await mail.queue(trx, {
          organizationId,
          to: target.email,
          subject: 'You are now the owner of your organization',
          text: `${current.email} made you the owner of the organization ${organizationId}. You can manage its members and billing at ${link}.`,
        });
        await mail.queue(trx, {
          organizationId,
          to: current.email,
          subject: 'You transferred ownership of your organization',
          text: `You made ${target.email} the owner of the organization ${organizationId}; you are now an admin. If this was not you, contact ${target.email} and support at once.`,
        });
        return toMember({ ...target, role: 'owner', updated_at: now });
      });
    },

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
      return service.addMember(trx, { organizationId: input.organizationId, userId: user.id, role: input.role });
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

    /**
     * `executor`: a caller's transaction, whose connection a read must share on SQLite. Also the
     * member a dashboard token acts as, read on every request and never remembered: a role change or
     * a removal must bind the member's very next request in every process, which no per-process
     * cache can promise.
     */
    async find(organizationId: string, id: string, executor: Db = db): Promise<Member | undefined> {
      const row = await store.find(executor, organizationId, id);
      return row ? toMember(row) : undefined;
    },

    /**
     * Who a credential acts as, for its authentication: the member's id, organization and role, read
     * from the store on every request like `find` (never remembered, for the same reason), without
     * the user's row that only answers need.
     */
    async findRole(organizationId: string, id: string): Promise<MemberRole | undefined> {
      const row = await store.findRole(db, organizationId, id);
      return row ? { id: row.id, organization_id: row.organization_id, role: row.role as Role } : undefined;
    },

    /**
     * Sets a member's role, in the caller's transaction: the write a role change is made of (who
     * may grant which role is the caller's rule).
     */
    async setRole(trx: Trx, organizationId: string, id: string, role: Role): Promise<Member> {
      if (!(await store.updateRole(trx, organizationId, id, role, clock.now().toISOString()))) throw notFound('member');
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
  return service;
}

export type MembersService = ReturnType<typeof createMembersService>;
