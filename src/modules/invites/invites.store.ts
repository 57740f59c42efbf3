import type { Db } from '../../db/connect.ts';
import { paginate, type PageRequest } from '../../db/pagination.ts';
import type { InviteSendsTable, InvitesTable } from '../../db/schema.ts';
import type { InviteStatus } from './invites.schemas.ts';

// Plain Kysely rather than compiled sites (db/compiled-query.ts): invites are written a few times a
// day per organization, far from any hot path.

export type InviteChanges = Partial<Omit<InvitesTable, 'id' | 'organization_id' | 'email' | 'role' | 'invited_by_member_id' | 'created_at'>>;

/** The statuses an invite may still be mailed or revoked from (a pending one may be past its expiry). */
const OPEN_STATUSES = ['pending', 'expired'];

export function createInvitesStore() {
  return {
    async insert(db: Db, row: InvitesTable): Promise<void> {
      await db.insertInto('invites').values(row).execute();
    },
    find(db: Db, organizationId: string, id: string): Promise<InvitesTable | undefined> {
      return db.selectFrom('invites').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
    },
    findByTokenHash(db: Db, tokenHash: string): Promise<InvitesTable | undefined> {
      return db.selectFrom('invites').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    },
    /** The invite stored as pending for this email, expired or not: there is at most one. */
    findPendingByEmail(db: Db, organizationId: string, email: string): Promise<InvitesTable | undefined> {
      return db
        .selectFrom('invites')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .where('email', '=', email)
        .where('status', '=', 'pending')
        .executeTakeFirst();
    },
    /**
     * Changes an invite that is still open (pending, or expired), so that it cannot also be accepted
     * or revoked by a request running at the same moment; answers whether it was.
     */
    async updateOpen(db: Db, id: string, changes: InviteChanges): Promise<boolean> {
      const result = await db.updateTable('invites').set(changes).where('id', '=', id).where('status', 'in', OPEN_STATUSES).executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    /**
     * Accepts by compare-and-set: only while the invite is pending, unexpired and still carries the
     * token presented. Of two accepts racing for one invite, exactly one changes the row.
     */
    async accept(db: Db, p: { id: string; tokenHash: string; now: string }): Promise<boolean> {
      const result = await db
        .updateTable('invites')
        .set({ status: 'accepted', accepted_at: p.now, updated_at: p.now })
        .where('id', '=', p.id)
        .where('token_hash', '=', p.tokenHash)
        .where('status', '=', 'pending')
        .where('expires_at', '>', p.now)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    async setMember(db: Db, id: string, memberId: string): Promise<void> {
      await db.updateTable('invites').set({ member_id: memberId }).where('id', '=', id).execute();
    },
    /** `now` decides which pending invites show as expired. */
    list(db: Db, organizationId: string, filters: { status?: InviteStatus | undefined; now: string }, page: PageRequest) {
      let query = db.selectFrom('invites').selectAll().where('organization_id', '=', organizationId);
      switch (filters.status) {
        case 'pending':
          query = query.where('status', '=', 'pending').where('expires_at', '>', filters.now);
          break;
        case 'expired':
          query = query.where((eb) => eb.or([eb('status', '=', 'expired'), eb.and([eb('status', '=', 'pending'), eb('expires_at', '<=', filters.now)])]));
          break;
        case 'accepted':
        case 'revoked':
          query = query.where('status', '=', filters.status);
          break;
        case undefined:
          break;
      }
      return paginate(query, { id: 'id', createdAt: 'created_at' }, page);
    },

    async insertSend(db: Db, row: InviteSendsTable): Promise<void> {
      await db.insertInto('invite_sends').values(row).execute();
    },
    findSendByTokenHash(db: Db, tokenHash: string): Promise<InviteSendsTable | undefined> {
      return db.selectFrom('invite_sends').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    },
    /** How many invite mails the organization sent after `since`, and when the oldest of them went. */
    async sendsSince(db: Db, organizationId: string, since: string): Promise<{ count: number; oldest: string | null }> {
      const row = await db
        .selectFrom('invite_sends')
        .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.min<string | null>('sent_at').as('oldest')])
        .where('organization_id', '=', organizationId)
        .where('sent_at', '>', since)
        .executeTakeFirstOrThrow();
      return { count: Number(row.count), oldest: row.oldest };
    },
  };
}

export type InvitesStore = ReturnType<typeof createInvitesStore>;
