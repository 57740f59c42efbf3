import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { InvitesTable } from '../../db/schema.ts';
import { DAY, SECOND, type Clock } from '../../lib/clock.ts';
import { hashPassword, randomToken, sha256Hex } from '../../lib/crypto.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import { DASHBOARD_TOKEN_PREFIX, principalFor, type AuthService, type IssuedSession } from '../auth/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import { outranks, ROLES, type Role } from '../credentials/scopes.schemas.ts';
import type { MailService } from '../mail/index.ts';
import type { MembersService } from '../members/index.ts';
import { normaliseEmail } from '../members/members.service.ts';
import type { OrganizationsService } from '../organizations/index.ts';
import type { AcceptInviteInput, CreateInviteInput, Invite, InviteRole, InviteStatus } from './invites.schemas.ts';
import type { InviteChanges, InvitesStore } from './invites.store.ts';

/** How long an invite link works, from its latest mail. */
export const INVITE_TTL_MS = 7 * DAY;
/** Invite mails (creations and resends) an organization may send in any 24 hours. */
export const INVITE_MAILS_PER_DAY = 100;
const CAP_WINDOW_MS = DAY;

/** A new invite token: the secret goes in the mail, only its hash is stored. */
interface Token {
  token: string;
  hash: string;
}

function mintToken(): Token {
  const token = randomToken(32);
  return { token, hash: sha256Hex(token) };
}

interface Sender {
  organizationName: string;
  /** The inviting member, as the mail names them. */
  inviter: string;
}

export interface InvitesServiceDeps {
  db: Db;
  store: InvitesStore;
  clock: Clock;
  isUniqueViolation: (error: unknown) => boolean;
  members: Pick<MembersService, 'addMember' | 'createUserAndMember' | 'find' | 'findByEmail' | 'findUserByEmail' | 'userIdOf'>;
  organizations: Pick<OrganizationsService, 'get'>;
  auth: Pick<AuthService, 'authenticate' | 'openSessionFor'>;
  mail: Pick<MailService, 'queue'>;
  audit: Pick<AuditEventsService, 'record'>;
  /** The dashboard's address: the base of the link in every invite mail. */
  publicBaseUrl: string;
  /** log2 of scrypt's N for the password of a new account (`PASSWORD_HASH_COST`). */
  passwordHashCost: number;
}

/** The status the API shows: a pending invite past its expiry is expired, without a write. */
function statusOf(row: InvitesTable, now: string): InviteStatus {
  return row.status === 'pending' && row.expires_at <= now ? 'expired' : (row.status as InviteStatus);
}

function toInvite(row: InvitesTable, now: string): Invite {
  return {
    id: row.id,
    object: 'invite',
    organization_id: row.organization_id,
    email: row.email,
    role: row.role as InviteRole,
    status: statusOf(row, now),
    invited_by: row.invited_by_member_id,
    member_id: row.member_id,
    expires_at: row.expires_at,
    last_sent_at: row.last_sent_at,
    accepted_at: row.accepted_at,
    revoked_at: row.revoked_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * A member creates, resends and revokes invites only for roles below their own (an admin cannot
 * invite an admin, nor resend or revoke an owner's invite of one). The route already limits callers
 * to owners and admins.
 */
function assertMayManage(principal: Principal, role: Role, param: string | null): void {
  if (principal.role && outranks(principal.role, role)) return;
  const allowed = ROLES.filter((candidate) => outranks(candidate, role));
  throw new AppError(
    'role_insufficient',
    `Only ${allowed.join(' or ')} members may invite ${role}s, or resend or revoke their invites: a member grants only roles below their own.`,
    {
      param,
      extra: { allowed_roles: allowed },
    },
  );
}

/** Why an invite found by its token cannot be accepted, or undefined if it can. */
function refusalOf(row: InvitesTable, now: string): AppError | undefined {
  switch (statusOf(row, now)) {
    case 'pending':
      return undefined;
    case 'accepted':
      return new AppError('invite_expired', 'The invite was already accepted: log in instead.', { param: '/token' });
    case 'revoked':
      return new AppError('invite_expired', 'The invite was revoked: ask an owner or admin for a new one.', { param: '/token' });
    case 'expired':
      return new AppError('invite_expired', 'The invite has expired: ask an owner or admin to send it again.', { param: '/token' });
  }
}

export function createInvitesService(deps: InvitesServiceDeps) {
  const { db, store, clock, isUniqueViolation, members, organizations, auth, mail, audit, publicBaseUrl, passwordHashCost } = deps;

  async function getRow(executor: Db, organizationId: string, id: string): Promise<InvitesTable> {
    const row = await store.find(executor, organizationId, id);
    if (!row) throw notFound('invite');
    return row;
  }

  /** `param`: where the request named the email, if it did. */
  async function assertNotMember(trx: Trx, organizationId: string, email: string, param: string | null): Promise<void> {
    if (await members.findByEmail(trx, organizationId, email)) {
      throw new AppError('resource_exists', `${email} is already a member of the organization.`, { param });
    }
  }

  /**
   * The daily cap, counted in the writing transaction. Two requests racing at 99 on PostgreSQL may
   * both pass: the cap stops a script (or a stolen session) from mailing strangers in bulk in the
   * organization's name; it is not a quota that must hold to the unit.
   */
  async function assertBelowDailyCap(trx: Trx, organizationId: string, now: Date): Promise<void> {
    const { count, oldest } = await store.sendsSince(trx, organizationId, new Date(now.getTime() - CAP_WINDOW_MS).toISOString());
    if (count < INVITE_MAILS_PER_DAY || oldest === null) return;
    // The cap frees a mail when the oldest one counted leaves the window.
    const retryAfter = Math.max(1, Math.ceil((Date.parse(oldest) + CAP_WINDOW_MS - now.getTime()) / SECOND));
    throw new AppError(
      'rate_limited',
      `The organization sent ${INVITE_MAILS_PER_DAY} invite mails (creations and resends) in the last 24 hours, the most it may; retry in ${retryAfter} s.`,
      { headers: { 'retry-after': String(retryAfter) } },
    );
  }

  function inviteLink(token: string): string {
    // In the fragment, which browsers never send: the token stays out of every server's access log.
    return `${publicBaseUrl}/dashboard/accept-invite#token=${token}`;
  }

  /**
   * What an invite mail says about where it comes from: read before the caller's transaction, since
   * on SQLite that transaction holds the one connection (docs/architecture.md).
   */
  async function senderOf(actor: Actor): Promise<Sender> {
    const { organizationId, memberId } = actor.principal;
    const organization = await organizations.get(organizationId);
    const inviter = memberId ? await members.find(organizationId, memberId) : undefined;
    return { organizationName: organization.name, inviter: inviter ? (inviter.name ? `${inviter.name} (${inviter.email})` : inviter.email) : 'A member' };
  }

  /** Records an invite's mail (the cap counts these, keyed by the token's hash) and queues it, with the link carrying the token. */
  async function mailInvite(trx: Trx, sender: Sender, invite: Pick<InvitesTable, 'id' | 'organization_id' | 'email' | 'role' | 'expires_at'>, token: Token) {
    await store.insertSend(trx, { token_hash: token.hash, organization_id: invite.organization_id, invite_id: invite.id, sent_at: clock.now().toISOString() });
    await mail.queue(trx, {
      organizationId: invite.organization_id,
      to: invite.email,
      subject: `You are invited to join ${sender.organizationName}`,
      text: [
        `${sender.inviter} invited you to join ${sender.organizationName} as ${invite.role === 'admin' ? 'an' : 'a'} ${invite.role}.`,
        '',
        `Accept the invite: ${inviteLink(token.token)}`,
        '',
        `The link works once, until ${invite.expires_at} (UTC). If you did not expect this invite, ignore this mail.`,
      ].join('\n'),
    });
  }

  /**
   * Who accepts: the person behind the invited email if they have an account, proven by a dashboard
   * token of theirs (of any organization); otherwise a new account, which needs a password.
   */
  async function accepterOf(row: InvitesTable, input: AcceptInviteInput, bearer: string | undefined) {
    const user = await members.findUserByEmail(row.email);
    if (!user) {
      if (input.password === undefined) {
        throw new AppError('validation_failed', `/password is required: ${row.email} has no account yet, so accepting creates one.`, {
          param: '/password',
          details: [{ param: '/password', code: 'missing', message: 'is required to create the account' }],
        });
      }
      return { kind: 'new' as const, passwordHash: await hashPassword(input.password, passwordHashCost) };
    }
    if (bearer === undefined) {
      throw new AppError('credential_missing', `${row.email} already has an account: log in as that person and accept with its dashboard token.`, {
        param: '/header/authorization',
      });
    }
    if (!bearer.startsWith(DASHBOARD_TOKEN_PREFIX)) {
      throw new AppError(
        'credential_invalid',
        `Accepting an invite takes the dashboard token (${DASHBOARD_TOKEN_PREFIX}…) of ${row.email}, not an API key or OAuth token.`,
        {
          param: '/header/authorization',
        },
      );
    }
    const principal = await auth.authenticate(bearer);
    const userId = principal.memberId ? await members.userIdOf(db, principal.organizationId, principal.memberId) : undefined;
    if (userId !== user.id) {
      throw new AppError('credential_invalid', `The dashboard token is not ${row.email}'s: the invite is accepted only by the person it was sent to.`, {
        param: '/header/authorization',
      });
    }
    for (const field of ['password', 'name'] as const) {
      if (input[field] !== undefined) throw invalidParam(`/${field}`, `is only for a new account: ${row.email} already has one`);
    }
    return { kind: 'existing' as const, userId: user.id };
  }

  return {
    async create(actor: Actor, input: CreateInviteInput): Promise<Invite> {
      const { principal } = actor;
      assertMayManage(principal, input.role, '/role');
      const email = normaliseEmail(input.email);
      const sender = await senderOf(actor);
      return db.transaction().execute(async (trx) => {
        const now = clock.now();
        const timestamp = now.toISOString();
        await assertNotMember(trx, principal.organizationId, email, '/email');
        const open = await store.findPendingByEmail(trx, principal.organizationId, email);
        if (open && open.expires_at > timestamp) {
          throw new AppError('resource_exists', `${email} already has a pending invite (${open.id}): resend it instead.`, { param: '/email' });
        }
        // An expired invite gives way to the new one: the one pending invite per email is the new one.
        if (open) await store.updateOpen(trx, open.id, { status: 'expired', updated_at: timestamp });
        await assertBelowDailyCap(trx, principal.organizationId, now);
        const id = newId('invite', now.getTime());
        const token = mintToken();
        const row: InvitesTable = {
          id,
          organization_id: principal.organizationId,
          email,
          role: input.role,
          status: 'pending',
          token_hash: token.hash,
          expires_at: new Date(now.getTime() + INVITE_TTL_MS).toISOString(),
          invited_by_member_id: principal.memberId!,
          member_id: null,
          last_sent_at: timestamp,
          accepted_at: null,
          revoked_at: null,
          created_at: timestamp,
          updated_at: timestamp,
        };
        try {
          await store.insert(trx, row);
        } catch (error) {
          // Another request invited the same email at the same moment, and committed first.
          if (isUniqueViolation(error)) throw new AppError('resource_exists', `${email} already has a pending invite.`, { param: '/email' });
          throw error;
        }
        await mailInvite(trx, sender, row, token);
        await audit.record(trx, actor, { action: 'invite.created', target: { type: 'invite', id }, data: { email, role: input.role } });
        return toInvite(row, timestamp);
      });
    },

    async get(organizationId: string, id: string): Promise<Invite> {
      return toInvite(await getRow(db, organizationId, id), clock.now().toISOString());
    },

    async list(organizationId: string, filters: { status?: InviteStatus | undefined }, page: PageRequest): Promise<Page<Invite>> {
      const now = clock.now().toISOString();
      return mapPage(await store.list(db, organizationId, { ...filters, now }, page), (row) => toInvite(row, now));
    },

    /** Mails a pending or expired invite again with a new token (the old link stops working) and a new week. */
    async resend(actor: Actor, id: string): Promise<Invite> {
      const { principal } = actor;
      const sender = await senderOf(actor);
      return db.transaction().execute(async (trx) => {
        const row = await getRow(trx, principal.organizationId, id);
        assertMayManage(principal, row.role as Role, null);
        const now = clock.now();
        const timestamp = now.toISOString();
        const status = statusOf(row, timestamp);
        if (status === 'accepted' || status === 'revoked') {
          throw new AppError('invalid_state', `The invite is ${status}: only a pending or expired invite can be sent again.`);
        }
        await assertNotMember(trx, principal.organizationId, row.email, null);
        await assertBelowDailyCap(trx, principal.organizationId, now);
        const token = mintToken();
        const changes: InviteChanges = {
          status: 'pending',
          token_hash: token.hash,
          expires_at: new Date(now.getTime() + INVITE_TTL_MS).toISOString(),
          last_sent_at: timestamp,
          updated_at: timestamp,
        };
        let updated: boolean;
        try {
          updated = await store.updateOpen(trx, id, changes);
        } catch (error) {
          // An invite that a newer one replaced cannot be revived beside it.
          if (isUniqueViolation(error)) throw new AppError('resource_exists', `${row.email} has a newer pending invite: resend that one.`, { param: null });
          throw error;
        }
        if (!updated) throw new AppError('invalid_state', 'The invite was accepted or revoked meanwhile.');
        const resent = { ...row, ...changes };
        await mailInvite(trx, sender, resent, token);
        await audit.record(trx, actor, { action: 'invite.resent', target: { type: 'invite', id }, data: { expires_at: resent.expires_at } });
        return toInvite(resent, timestamp);
      });
    },

    /** Revokes a pending (or expired) invite: its link stops working. Accepted and revoked invites stay as they are. */
    async revoke(actor: Actor, id: string): Promise<Invite> {
      const { principal } = actor;
      return db.transaction().execute(async (trx) => {
        const row = await getRow(trx, principal.organizationId, id);
        assertMayManage(principal, row.role as Role, null);
        const timestamp = clock.now().toISOString();
        const status = statusOf(row, timestamp);
        if (status === 'accepted' || status === 'revoked') throw new AppError('invalid_state', `The invite is already ${status}.`);
        const changes: InviteChanges = { status: 'revoked', revoked_at: timestamp, updated_at: timestamp };
        if (!(await store.updateOpen(trx, id, changes))) throw new AppError('invalid_state', 'The invite was accepted or revoked meanwhile.');
        await audit.record(trx, actor, { action: 'invite.revoked', target: { type: 'invite', id } });
        return toInvite({ ...row, ...changes }, timestamp);
      });
    },

    /**
     * Accepts an invite by its token: the person becomes a member and gets a dashboard session. One
     * transaction takes the invite from pending by compare-and-set, adds the member and opens the
     * session, so two accepts of one token make one member and the loser is refused.
     * `bearer`: the Authorization header's credential, if any; read only when the invited email
     * already has an account.
     */
    async accept(input: AcceptInviteInput, bearer: string | undefined, requestId: string): Promise<IssuedSession> {
      const tokenHash = sha256Hex(input.token);
      const row = await store.findByTokenHash(db, tokenHash);
      if (!row) {
        if (await store.findSendByTokenHash(db, tokenHash)) {
          throw new AppError('invite_expired', 'This invite link was replaced by a newer mail: use the link in the latest one.', { param: '/token' });
        }
        throw new AppError('resource_not_found', 'No invite has this token.', { param: '/token' });
      }
      const refusal = refusalOf(row, clock.now().toISOString());
      if (refusal) throw refusal;
      const accepter = await accepterOf(row, input, bearer);
      // Read before the transaction: on SQLite it holds the one connection (docs/architecture.md).
      const organization = await organizations.get(row.organization_id);
      const role = row.role as InviteRole;

      return db.transaction().execute(async (trx) => {
        const now = clock.now().toISOString();
        if (!(await store.accept(trx, { id: row.id, tokenHash, now }))) {
          const current = await store.find(trx, row.organization_id, row.id);
          throw (current && refusalOf(current, now)) ?? new AppError('invite_expired', 'This invite link was replaced by a newer mail.', { param: '/token' });
        }
        const member =
          accepter.kind === 'existing'
            ? await members.addMember(trx, { organizationId: row.organization_id, userId: accepter.userId, role })
            : await members.createUserAndMember(trx, {
                email: row.email,
                name: input.name ?? null,
                passwordHash: accepter.passwordHash,
                organizationId: row.organization_id,
                role,
              });
        await store.setMember(trx, row.id, member.id);
        const session = await auth.openSessionFor(trx, member, organization);
        const actor = { principal: principalFor(member, session.sessionId), requestId };
        await audit.record(trx, actor, { action: 'invite.accepted', target: { type: 'invite', id: row.id }, data: { member_id: member.id } });
        await audit.record(trx, actor, { action: 'member.created', target: { type: 'member', id: member.id }, data: { role, invite_id: row.id } });
        return session;
      });
    },
  };
}

export type InvitesService = ReturnType<typeof createInvitesService>;
