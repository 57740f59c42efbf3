import type { Db, Trx } from '../../db/connect.ts';
import type { DashboardSessionsTable } from '../../db/schema.ts';
import { DAY, MINUTE, SECOND, type Clock } from '../../lib/clock.ts';
import { hashPassword, randomToken, sha256Hex, verifyPassword } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { RecentReads } from '../../lib/recent-reads.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { Principal } from '../credentials/principal.ts';
import { ROLE_SCOPES, type Role, type Scope } from '../credentials/scopes.schemas.ts';
import type { MemberRole, MembersService } from '../members/index.ts';
import type { Member } from '../members/members.schemas.ts';
import type { OrganizationsService } from '../organizations/index.ts';
import type { Organization } from '../organizations/organizations.schemas.ts';
import type { DashboardToken, LoginInput, SignupInput } from './auth.schemas.ts';
import type { AuthStore } from './auth.store.ts';

export const DASHBOARD_TOKEN_PREFIX = 'dtk_';
const REFRESH_TOKEN_PREFIX = 'drt_';
export const DASHBOARD_TOKEN_TTL_MS = 15 * MINUTE;
export const REFRESH_TOKEN_TTL_MS = 30 * DAY;
/** How long after a rotation the replaced refresh token is taken for a concurrent tab, not a thief. */
export const REFRESH_REUSE_GRACE_MS = 30 * SECOND;

export interface IssuedSession {
  sessionId: string;
  body: DashboardToken;
  refreshToken: string;
  refreshExpiresAt: Date;
}

export interface AuthServiceDeps {
  db: Db;
  store: AuthStore;
  clock: Clock;
  organizations: Pick<OrganizationsService, 'create' | 'get'>;
  members: Pick<MembersService, 'createUserAndMember' | 'find' | 'findRole' | 'findUserByEmail' | 'listMembershipsOfUser'>;
  audit: Pick<AuditEventsService, 'record'>;
  /** log2 of scrypt's N for new password hashes (`PASSWORD_HASH_COST`). */
  passwordHashCost: number;
}

/**
 * The session behind a dashboard token is remembered for a second (by the token's hash), its expiry
 * still checked on every request. Logging out, refreshing and ending a session for a reused refresh
 * token forget it at once in this process; another process may accept the old token for at most
 * this long.
 */
export const SESSION_CACHE_TTL_MS = 1000;
const SESSION_CACHE_MAX = 10_000;

export function createAuthService(deps: AuthServiceDeps) {
  const { db, store, clock, organizations, members, audit, passwordHashCost } = deps;
  // Verifying against this when the email is unknown keeps "no such account" as slow as "wrong
  // password": made at the configured cost, so both take the same time.
  const unknownUserHash = hashPassword(randomToken(), passwordHashCost);
  const sessions = new RecentReads<DashboardSessionsTable>({ clock, ttlMs: SESSION_CACHE_TTL_MS, maxEntries: SESSION_CACHE_MAX });
  const sessionTags = (session: DashboardSessionsTable) => [session.id];

  /** An unknown or logged-out session throws here, so only a live one is ever remembered. */
  async function liveSession(hash: string): Promise<DashboardSessionsTable> {
    const session = await store.findByAccessHash(db, hash);
    if (!session) throw new AppError('credential_invalid', 'The dashboard token is not valid.');
    if (session.revoked_at) throw new AppError('credential_revoked', 'The session was logged out.');
    return session;
  }

  function newTokens(now: Date) {
    const access = DASHBOARD_TOKEN_PREFIX + randomToken(32);
    const refresh = REFRESH_TOKEN_PREFIX + randomToken(32);
    return {
      access,
      refresh,
      accessExpiresAt: new Date(now.getTime() + DASHBOARD_TOKEN_TTL_MS),
    };
  }

  /**
   * A refresh token that a rotation replaced. Within a few seconds of that rotation it is a second
   * tab that refreshed at the same moment: refused, nothing else. Later, two parties hold the
   * session's tokens (one of them stolen), and there is no telling which: the session ends for both.
   */
  async function refuseReplacedToken(hash: string): Promise<never> {
    const session = await store.findByPreviousRefreshHash(db, hash);
    if (!session || session.revoked_at) throw new AppError('credential_invalid', 'The refresh token is not valid: log in again.');
    const now = clock.now();
    if (now.getTime() - Date.parse(session.rotated_at!) < REFRESH_REUSE_GRACE_MS) {
      throw new AppError('credential_invalid', 'The refresh token was already used: log in again.');
    }
    await store.revoke(db, session.id, now.toISOString());
    sessions.forget(session.id);
    throw new AppError('credential_revoked', 'The refresh token had already been used, so the session was ended as a precaution: log in again.');
  }

  async function openSession(trx: Trx, member: Member, organization: Organization): Promise<IssuedSession> {
    const now = clock.now();
    const tokens = newTokens(now);
    const refreshExpiresAt = new Date(now.getTime() + REFRESH_TOKEN_TTL_MS);
    const session: DashboardSessionsTable = {
      id: newId('dashboardSession', now.getTime()),
      organization_id: member.organization_id,
      member_id: member.id,
      access_token_hash: sha256Hex(tokens.access),
      access_expires_at: tokens.accessExpiresAt.toISOString(),
      refresh_token_hash: sha256Hex(tokens.refresh),
      refresh_expires_at: refreshExpiresAt.toISOString(),
      created_at: now.toISOString(),
      previous_refresh_token_hash: null,
      rotated_at: null,
      revoked_at: null,
    };
    await store.insertSession(trx, session);
    return {
      sessionId: session.id,
      body: tokenBody(tokens.access, tokens.accessExpiresAt, member, organization),
      refreshToken: tokens.refresh,
      refreshExpiresAt,
    };
  }

  function tokenBody(token: string, expiresAt: Date, member: Member, organization: Organization): DashboardToken {
    return { object: 'dashboard_token', token, expires_at: expiresAt.toISOString(), organization, member };
  }

  const service = {
    /**
     * Opens a dashboard session for a member who has just joined (an accepted invite), in the
     * caller's transaction: the answer of a sign-in, without a password check. The organization is
     * read by the caller before its transaction (SQLite has one connection to share).
     */
    openSessionFor(trx: Trx, member: Member, organization: Organization): Promise<IssuedSession> {
      return openSession(trx, member, organization);
    },

    /**
     * A member leaves: their sessions go with their row (on delete cascade), and are forgotten here at
     * once, so that their tokens are unknown from the next request on (other processes: within
     * SESSION_CACHE_TTL_MS, until which the member lookup refuses them as removed).
     */
    async forgetSessionsOf(trx: Trx, member: Member): Promise<void> {
      for (const id of await store.sessionIdsOf(trx, member.id)) sessions.forget(id);
    },

    async signup(input: SignupInput, requestId: string): Promise<IssuedSession> {
      const passwordHash = await hashPassword(input.password, passwordHashCost);
      return db.transaction().execute(async (trx) => {
        const organization = await organizations.create(trx, { name: input.organization_name });
        const member = await members.createUserAndMember(trx, {
          email: input.email,
          name: input.name ?? null,
          passwordHash,
          organizationId: organization.id,
          role: 'owner',
        });
        const session = await openSession(trx, member, organization);
        const principal = principalFor(session.body.member, session.sessionId);
        const actor = { principal, requestId };
        await audit.record(trx, actor, {
          action: 'organization.created',
          target: { type: 'organization', id: organization.id },
          data: { name: organization.name },
        });
        await audit.record(trx, actor, { action: 'member.created', target: { type: 'member', id: member.id }, data: { role: member.role } });
        return session;
      });
    },

    /**
     * The person's memberships once their password is proven, without opening a session: what a sign-in
     * outside the dashboard (the OAuth consent page) needs. Same answer and same time as login for a
     * wrong password or an unknown email.
     */
    async verifyPassword(email: string, password: string): Promise<{ userId: string; memberships: Member[] }> {
      const user = await members.findUserByEmail(email);
      const passwordOk = await verifyPassword(password, user?.password_hash ?? (await unknownUserHash));
      if (!user || !passwordOk) throw new AppError('login_failed', 'The email or password is incorrect.');
      return { userId: user.id, memberships: await members.listMembershipsOfUser(user.id) };
    },

    async login(input: LoginInput, requestId: string): Promise<IssuedSession> {
      const { memberships } = await service.verifyPassword(input.email, input.password);
      const member = input.organization_id ? memberships.find((m) => m.organization_id === input.organization_id) : memberships[0];
      if (!member) {
        // Same answer as a wrong password: a login attempt must not reveal which organizations exist.
        throw new AppError('login_failed', 'The email or password is incorrect.');
      }
      const organization = await organizations.get(member.organization_id);
      return db.transaction().execute(async (trx) => {
        const session = await openSession(trx, member, organization);
        await audit.record(
          trx,
          { principal: principalFor(member, session.sessionId), requestId },
          {
            action: 'session.created',
            target: { type: 'member', id: member.id },
          },
        );
        return session;
      });
    },

    /** Exchanges the refresh token (from its cookie) for a new dashboard token and a new refresh token. */
    async refresh(refreshToken: string | undefined): Promise<IssuedSession> {
      if (!refreshToken) throw new AppError('credential_missing', 'No refresh token: log in again.');
      const hash = sha256Hex(refreshToken);
      const session = await store.findByRefreshHash(db, hash);
      if (!session) return refuseReplacedToken(hash);
      if (session.revoked_at) throw new AppError('credential_revoked', 'The session was logged out: log in again.');
      const now = clock.now();
      if (session.refresh_expires_at <= now.toISOString()) throw new AppError('credential_expired', 'The session has expired: log in again.');
      const member = await members.find(session.organization_id, session.member_id);
      if (!member) throw new AppError('credential_revoked', 'The member was removed from the organization.');
      const tokens = newTokens(now);
      const rotated = await store.rotateTokens(db, session.id, session.refresh_token_hash, {
        access_token_hash: sha256Hex(tokens.access),
        access_expires_at: tokens.accessExpiresAt.toISOString(),
        refresh_token_hash: sha256Hex(tokens.refresh),
        rotated_at: now.toISOString(),
      });
      // The old dashboard token stops working with the rotation, here at once.
      sessions.forget(session.id);
      if (!rotated) throw new AppError('credential_invalid', 'The refresh token was already used: log in again.');
      return {
        sessionId: session.id,
        body: tokenBody(tokens.access, tokens.accessExpiresAt, member, await organizations.get(member.organization_id)),
        refreshToken: tokens.refresh,
        refreshExpiresAt: new Date(session.refresh_expires_at),
      };
    },

    /** Ends the session named by the refresh cookie or the dashboard token; unknown ones are already ended. */
    async logout(tokens: { refreshToken?: string | undefined; accessToken?: string | undefined }, requestId: string): Promise<string | null> {
      const session =
        (tokens.refreshToken ? await store.findByRefreshHash(db, sha256Hex(tokens.refreshToken)) : undefined) ??
        (tokens.accessToken ? await store.findByAccessHash(db, sha256Hex(tokens.accessToken)) : undefined);
      if (!session || session.revoked_at) return null;
      const member = await members.find(session.organization_id, session.member_id);
      await db.transaction().execute(async (trx) => {
        await store.revoke(trx, session.id, clock.now().toISOString());
        sessions.forget(session.id);
        if (member) {
          await audit.record(
            trx,
            { principal: principalFor(member, session.id), requestId },
            { action: 'session.revoked', target: { type: 'member', id: member.id } },
          );
        }
      });
      return session.id;
    },

    async authenticate(token: string): Promise<Principal> {
      const hash = sha256Hex(token);
      const session = await sessions.read(hash, () => liveSession(hash), sessionTags);
      if (session.access_expires_at <= clock.now().toISOString()) {
        throw new AppError('credential_expired', 'The dashboard token has expired; renew it with POST /auth/refresh.');
      }
      // The member is read for every request (never remembered), so that a role change or a removal
      // binds the very next request.
      const member = await members.findRole(session.organization_id, session.member_id);
      if (!member) throw new AppError('credential_revoked', 'The member was removed from the organization.');
      return { ...principalFor(member, session.id, session.created_at), expiresAt: session.access_expires_at };
    },
  };
  return service;
}

// One set per role, shared by every principal of that role (scopes are read-only).
const ROLE_SCOPE_SETS: Record<Role, ReadonlySet<Scope>> = {
  owner: new Set(ROLE_SCOPES.owner),
  admin: new Set(ROLE_SCOPES.admin),
  agent: new Set(ROLE_SCOPES.agent),
  viewer: new Set(ROLE_SCOPES.viewer),
};

/** The caller a dashboard session of `member` is: also the actor of what a just-opened session did (an accepted invite). */
export function principalFor(member: MemberRole, sessionId: string, signedInAt?: string): Principal {
  return {
    ...(signedInAt === undefined ? {} : { signedInAt }),
    kind: 'dashboard_token',
    credentialId: sessionId,
    organizationId: member.organization_id,
    memberId: member.id,
    role: member.role,
    mode: null,
    connectionId: null,
    scopes: ROLE_SCOPE_SETS[member.role],
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
