import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { OauthGrantsTable } from '../../db/schema.ts';
import { DAY, HOUR, MINUTE, type Clock } from '../../lib/clock.ts';
import { constantTimeEqual, randomToken, sha256Hex, type SecretBox } from '../../lib/crypto.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { newId, isIdOf } from '../../lib/ids.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { AuthService } from '../auth/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import { OAUTH_FORBIDDEN_SCOPES, ROLE_SCOPES, SCOPES, type Role, type Scope } from '../credentials/scopes.schemas.ts';
import type { Member, MembersService } from '../members/index.ts';
import type { OauthTokensService } from '../oauth-tokens/index.ts';
import type { OrganizationsService } from '../organizations/index.ts';
import { ClientDocumentError, type ClientDocuments } from './oauth-client-documents.ts';
import { redirectUriMatches, redirectUriProblem } from './oauth-redirect-uris.ts';
import type {
  AuthorizationServerMetadata,
  AuthorizeParams,
  AuthorizedApp,
  ConsentInput,
  ProtectedResourceMetadata,
  RegisterClientInput,
  RegisteredClient,
  RevokeInput,
  SignInInput,
  TokenInput,
  TokenResponse,
} from './oauth.schemas.ts';
import type { OauthStore } from './oauth.store.ts';

export const ACCESS_TOKEN_TTL_MS = HOUR;
export const REFRESH_TOKEN_TTL_MS = 30 * DAY;
export const AUTHORIZATION_CODE_TTL_MS = MINUTE;
/** A registered client that nobody has used (authorized or obtained a token) for this long is gone. */
export const CLIENT_UNUSED_TTL_MS = 30 * DAY;
/** How long the consent page's sealed request stays good: sign in and decide within it. */
export const CONSENT_PAGE_TTL_MS = 10 * MINUTE;
const REFRESH_TOKEN_PREFIX = 'ort_';
const DEFAULT_CLIENT_NAME = 'Unnamed app';

/** Every scope an app may be granted: all of them but key management. */
export const OAUTH_SCOPES: readonly Scope[] = SCOPES.filter((scope) => !OAUTH_FORBIDDEN_SCOPES.includes(scope));

/** An OAuth protocol error: RFC 6749 §5.2 at the token endpoint, RFC 7591 §3.2.2 at registration, RFC 7009 at revocation. */
export class OauthError extends Error {
  readonly error: string;
  readonly status: number;
  constructor(error: string, description: string, status = 400) {
    super(description);
    this.error = error;
    this.status = status;
  }
}

/** The client as the consent page shows it. */
export interface ClientView {
  id: string;
  name: string;
  /** false: dynamically registered, its name only its own claim (the page says "unverified"). */
  verified: boolean;
  redirectHost: string;
}

export interface SignInView {
  client: ClientView;
  scopes: Scope[];
  resource: string;
  request: string;
  error?: string;
  email?: string;
}

export interface ConsentView {
  client: ClientView;
  scopes: Scope[];
  resource: string;
  consent: string;
  email: string;
  organizations: { id: string; name: string; role: Role; grantable: Scope[] }[];
}

/** What the authorization endpoint answers: a page of its own, or the browser sent back to the client. */
export type AuthorizeOutcome =
  | { kind: 'error_page'; status: number; message: string }
  | { kind: 'redirect'; location: string }
  | { kind: 'sign_in'; status: number; view: SignInView }
  | { kind: 'consent'; view: ConsentView };

/** The authorization request as validated, carried sealed by the pages (so a POST cannot change it). */
interface SealedRequest {
  clientId: string;
  clientName: string;
  clientVerified: boolean;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  scopes: Scope[];
  state: string | null;
  expiresAt: number;
}

interface SealedConsent extends SealedRequest {
  userId: string;
  email: string;
}

const SEAL_REQUEST = 'oauth.authorize.request';
const SEAL_CONSENT = 'oauth.authorize.consent';
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

interface ResolvedClient {
  id: string;
  name: string;
  redirectUris: string[];
  verified: boolean;
}

export interface OauthServiceDeps {
  db: Db;
  store: OauthStore;
  clock: Clock;
  secrets: SecretBox;
  publicBaseUrl: string;
  clientDocuments: ClientDocuments;
  auth: Pick<AuthService, 'verifyPassword'>;
  members: Pick<MembersService, 'find' | 'listMembershipsOfUser'>;
  organizations: Pick<OrganizationsService, 'get'>;
  oauthTokens: Pick<OauthTokensService, 'issue' | 'revokeGrant' | 'revokePresented'>;
  audit: Pick<AuditEventsService, 'record'>;
}

function toAuthorizedApp(row: OauthGrantsTable): AuthorizedApp {
  return {
    id: row.id,
    object: 'authorized_app',
    client: { id: row.client_id, name: row.client_name, verified: row.client_verified === 1 },
    member_id: row.member_id,
    scopes: JSON.parse(row.scopes) as Scope[],
    resource: row.resource,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
  };
}

function pkceChallenge(verifier: string): string {
  return Buffer.from(sha256Hex(verifier), 'hex').toString('base64url');
}

/** Space-separated scopes, each at most once, in catalogue order. */
function scopeString(scopes: readonly Scope[]): string {
  return SCOPES.filter((scope) => scopes.includes(scope)).join(' ');
}

export function createOauthService(deps: OauthServiceDeps) {
  const { db, store, clock, secrets, publicBaseUrl, clientDocuments, auth, members, organizations, oauthTokens, audit } = deps;
  const issuer = publicBaseUrl;
  const resources = { v1: `${publicBaseUrl}/v1`, mcp: `${publicBaseUrl}/mcp` } as const;
  const knownResources: readonly string[] = [resources.v1, resources.mcp];

  const nowIso = () => clock.now().toISOString();

  async function findClient(clientId: string): Promise<ResolvedClient | undefined> {
    if (clientDocuments.isDocumentUrl(clientId)) {
      const document = await clientDocuments.resolve(clientId);
      return { id: document.clientId, name: document.name, redirectUris: document.redirectUris, verified: true };
    }
    if (!isIdOf('oauthClient', clientId)) return undefined;
    const row = await store.findClient(db, clientId);
    if (!row || row.last_used_at <= new Date(clock.now().getTime() - CLIENT_UNUSED_TTL_MS).toISOString()) return undefined;
    return { id: row.id, name: row.client_name, redirectUris: JSON.parse(row.redirect_uris) as string[], verified: false };
  }

  async function touchClient(executor: Db, clientId: string, at: string): Promise<void> {
    if (isIdOf('oauthClient', clientId)) await store.touchClient(executor, clientId, at);
  }

  function redirectWith(redirectUri: string, params: Record<string, string | null>): { kind: 'redirect'; location: string } {
    const url = new URL(redirectUri);
    for (const [name, value] of Object.entries(params)) if (value !== null) url.searchParams.set(name, value);
    // RFC 9207: the issuer is named in every answer, so a client talking to several servers cannot be mixed up.
    url.searchParams.set('iss', issuer);
    return { kind: 'redirect', location: url.href };
  }

  function errorRedirect(request: Pick<SealedRequest, 'redirectUri' | 'state'>, error: string, description: string) {
    return redirectWith(request.redirectUri, { error, error_description: description, state: request.state });
  }

  function clientView(request: SealedRequest): ClientView {
    return { id: request.clientId, name: request.clientName, verified: request.clientVerified, redirectHost: new URL(request.redirectUri).host };
  }

  function seal(kind: string, payload: SealedRequest | SealedConsent): string {
    return secrets.seal(JSON.stringify(payload), kind);
  }

  /** The sealed payload, or undefined when it is not one this server sealed for `kind`, or has expired. */
  function open<T extends SealedRequest>(kind: string, sealed: string): T | undefined {
    let payload: T;
    try {
      payload = JSON.parse(secrets.open(sealed, kind)) as T;
    } catch {
      return undefined;
    }
    return payload.expiresAt > clock.now().getTime() ? payload : undefined;
  }

  const expiredPage = {
    kind: 'error_page',
    status: 400,
    message: 'This authorization page has expired or was altered. Go back to the app and start connecting again.',
  } as const;

  /** Requested ∩ the role's scopes, never key management. */
  function grantableFor(role: Role, requested: readonly Scope[]): Scope[] {
    const allowed = ROLE_SCOPES[role];
    return requested.filter((scope) => allowed.includes(scope) && !OAUTH_FORBIDDEN_SCOPES.includes(scope));
  }

  async function consentView(request: SealedRequest, userId: string, email: string): Promise<AuthorizeOutcome> {
    const memberships = await members.listMembershipsOfUser(userId);
    if (memberships.length === 0)
      return { kind: 'error_page', status: 403, message: 'This account is not a member of any organization, so there is nothing to authorize.' };
    const organizationsOf = await Promise.all(
      memberships.map(async (member) => ({
        id: member.organization_id,
        name: (await organizations.get(member.organization_id)).name,
        role: member.role,
        grantable: grantableFor(member.role, request.scopes),
      })),
    );
    const consent = seal(SEAL_CONSENT, { ...request, userId, email, expiresAt: clock.now().getTime() + CONSENT_PAGE_TTL_MS });
    return {
      kind: 'consent',
      view: { client: clientView(request), scopes: request.scopes, resource: request.resource, consent, email, organizations: organizationsOf },
    };
  }

  /** Revokes a grant and everything issued under it, in the caller's transaction. */
  async function revokeFamily(trx: Trx, grantId: string): Promise<void> {
    await store.revokeGrant(trx, grantId, nowIso());
    await oauthTokens.revokeGrant(trx, grantId);
  }

  /** Mints an access token and a refresh token for a grant, in the caller's transaction. */
  async function issueTokens(trx: Trx, grant: OauthGrantsTable, scopes: readonly Scope[], role: Role): Promise<TokenResponse> {
    const now = clock.now();
    const access = await oauthTokens.issue(trx, {
      organizationId: grant.organization_id,
      clientName: grant.client_name,
      scopes,
      ttlMs: ACCESS_TOKEN_TTL_MS,
      resource: grant.resource,
      grant: { id: grant.id, memberId: grant.member_id, clientId: grant.client_id },
    });
    const refresh = REFRESH_TOKEN_PREFIX + randomToken(32);
    await store.insertRefreshToken(trx, {
      id: newId('oauthRefreshToken', now.getTime()),
      grant_id: grant.id,
      token_hash: sha256Hex(refresh),
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + REFRESH_TOKEN_TTL_MS).toISOString(),
      used_at: null,
    });
    await store.touchGrant(trx, grant.id, now.toISOString());
    await touchClient(trx, grant.client_id, now.toISOString());
    return {
      access_token: access.token,
      token_type: 'Bearer',
      expires_in: Math.floor(ACCESS_TOKEN_TTL_MS / 1000),
      refresh_token: refresh,
      // What the token can do now: granted, and bounded by the member's current role.
      scope: scopeString(grantableFor(role, scopes)),
    };
  }

  function requireParam(value: string | undefined, name: string): string {
    if (value === undefined || value === '') throw new OauthError('invalid_request', `${name} is required.`);
    return value;
  }

  /** The client of a token or revocation request: a registered one must still exist; a metadata document URL is taken as it is (codes and grants are bound to it). */
  async function requireTokenClient(clientId: string): Promise<void> {
    if (clientDocuments.isDocumentUrl(clientId)) return;
    if (!isIdOf('oauthClient', clientId) || !(await store.findClient(db, clientId))) {
      throw new OauthError('invalid_client', 'The client_id is not a client of this server (registrations unused for 30 days expire).', 401);
    }
  }

  async function exchangeCode(input: TokenInput): Promise<TokenResponse> {
    const code = requireParam(input.code, 'code');
    const redirectUri = requireParam(input.redirect_uri, 'redirect_uri');
    const verifier = requireParam(input.code_verifier, 'code_verifier (PKCE)');
    if (!CODE_VERIFIER.test(verifier)) throw new OauthError('invalid_request', 'code_verifier must be 43 to 128 characters of [A-Za-z0-9._~-] (RFC 7636).');
    const hash = sha256Hex(code);
    // Decided inside the transaction, thrown after it: a replay's revocation must commit.
    const outcome = await db.transaction().execute(async (trx): Promise<TokenResponse | OauthError> => {
      const row = await store.lockCode(trx, hash);
      if (!row || row.client_id !== input.client_id) return new OauthError('invalid_grant', 'The authorization code is not valid for this client.');
      if (row.used_at !== null) {
        if (row.grant_id !== null) await revokeFamily(trx, row.grant_id);
        return new OauthError('invalid_grant', 'The authorization code was already used; as a precaution every token issued from it is revoked.');
      }
      if (row.expires_at <= nowIso()) return new OauthError('invalid_grant', 'The authorization code has expired (codes live 60 seconds).');
      if (row.redirect_uri !== redirectUri) return new OauthError('invalid_grant', 'redirect_uri is not the one of the authorization request.');
      if (!constantTimeEqual(pkceChallenge(verifier), row.code_challenge))
        return new OauthError('invalid_grant', 'The code_verifier does not match the code_challenge.');
      if (input.resource !== undefined && input.resource !== row.resource) {
        return new OauthError('invalid_target', `The code was issued for the resource ${row.resource}.`);
      }
      const member = await members.find(row.organization_id, row.member_id, trx);
      if (!member) return new OauthError('invalid_grant', 'The member who authorized the app is no longer in the organization.');
      const now = nowIso();
      const grant: OauthGrantsTable = {
        id: newId('oauthGrant', clock.now().getTime()),
        organization_id: row.organization_id,
        member_id: row.member_id,
        client_id: row.client_id,
        client_name: row.client_name,
        client_verified: row.client_verified,
        scopes: row.scopes,
        resource: row.resource,
        created_at: now,
        last_used_at: now,
        revoked_at: null,
      };
      await store.insertGrant(trx, grant);
      if (!(await store.markCodeUsed(trx, hash, now, grant.id))) throw new Error('an authorization code locked as unused was used meanwhile');
      return issueTokens(trx, grant, JSON.parse(row.scopes) as Scope[], member.role);
    });
    if (outcome instanceof OauthError) throw outcome;
    return outcome;
  }

  async function refresh(input: TokenInput): Promise<TokenResponse> {
    const presented = requireParam(input.refresh_token, 'refresh_token');
    const hash = sha256Hex(presented);
    const narrowed = input.scope === undefined ? undefined : input.scope.split(' ').filter((scope) => scope !== '');
    const outcome = await db.transaction().execute(async (trx): Promise<TokenResponse | OauthError> => {
      const row = await store.findRefreshToken(trx, hash);
      const grant = row ? await store.findGrant(trx, row.grant_id) : undefined;
      if (!row || !grant || grant.client_id !== input.client_id) return new OauthError('invalid_grant', 'The refresh token is not valid for this client.');
      if (grant.revoked_at !== null) return new OauthError('invalid_grant', 'The authorization was revoked: authorize the app again.');
      if (row.used_at !== null) {
        // Two parties hold the grant's tokens and there is no telling which is the app: it ends for both.
        await revokeFamily(trx, grant.id);
        return new OauthError('invalid_grant', 'The refresh token was already used; as a precaution the authorization and every token of it are revoked.');
      }
      if (row.expires_at <= nowIso()) return new OauthError('invalid_grant', 'The refresh token has expired: authorize the app again.');
      if (input.resource !== undefined && input.resource !== grant.resource)
        return new OauthError('invalid_target', `The grant is for the resource ${grant.resource}.`);
      const granted = JSON.parse(grant.scopes) as Scope[];
      const outside = narrowed?.find((scope) => !granted.includes(scope as Scope));
      if (outside !== undefined) return new OauthError('invalid_scope', `${outside} was not granted; a refresh can only narrow the scopes.`);
      const member = await members.find(grant.organization_id, grant.member_id, trx);
      if (!member) {
        await revokeFamily(trx, grant.id);
        return new OauthError('invalid_grant', 'The member who authorized the app is no longer in the organization.');
      }
      if (!(await store.markRefreshUsed(trx, row.id, nowIso()))) {
        await revokeFamily(trx, grant.id);
        return new OauthError('invalid_grant', 'The refresh token was already used; as a precaution the authorization and every token of it are revoked.');
      }
      return issueTokens(trx, grant, narrowed ? granted.filter((scope) => narrowed.includes(scope)) : granted, member.role);
    });
    if (outcome instanceof OauthError) throw outcome;
    return outcome;
  }

  return {
    resources,

    authorizationServerMetadata(): AuthorizationServerMetadata {
      return {
        issuer,
        authorization_endpoint: `${issuer}/oauth/authorize`,
        token_endpoint: `${issuer}/oauth/token`,
        registration_endpoint: `${issuer}/oauth/register`,
        revocation_endpoint: `${issuer}/oauth/revoke`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
        revocation_endpoint_auth_methods_supported: ['none'],
        scopes_supported: [...OAUTH_SCOPES],
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: true,
      };
    },

    protectedResourceMetadata(which: keyof typeof resources): ProtectedResourceMetadata {
      return {
        resource: resources[which],
        authorization_servers: [issuer],
        scopes_supported: [...OAUTH_SCOPES],
        bearer_methods_supported: ['header'],
        resource_name: which === 'mcp' ? 'Messaging Service tool server (MCP)' : 'Messaging Service API (/v1)',
      };
    },

    /** RFC 7591 dynamic registration: a public client (PKCE, no secret), its name marked unverified wherever it is shown. */
    async register(input: RegisterClientInput): Promise<RegisteredClient> {
      for (const uri of input.redirect_uris) {
        const problem = redirectUriProblem(uri);
        if (problem) throw new OauthError('invalid_redirect_uri', `The redirect URI ${uri} ${problem}.`);
      }
      if (input.token_endpoint_auth_method !== undefined && input.token_endpoint_auth_method !== 'none') {
        throw new OauthError('invalid_client_metadata', 'token_endpoint_auth_method must be none: clients are public and prove themselves with PKCE.');
      }
      const unsupportedGrant = input.grant_types?.find((type) => type !== 'authorization_code' && type !== 'refresh_token');
      if (unsupportedGrant !== undefined) throw new OauthError('invalid_client_metadata', `grant_types: ${unsupportedGrant} is not supported.`);
      const unsupportedResponse = input.response_types?.find((type) => type !== 'code');
      if (unsupportedResponse !== undefined) throw new OauthError('invalid_client_metadata', `response_types: ${unsupportedResponse} is not supported.`);
      const now = clock.now();
      const row = {
        id: newId('oauthClient', now.getTime()),
        client_name: input.client_name?.trim() || DEFAULT_CLIENT_NAME,
        redirect_uris: JSON.stringify([...new Set(input.redirect_uris)]),
        created_at: now.toISOString(),
        last_used_at: now.toISOString(),
      };
      await store.insertClient(db, row);
      return {
        client_id: row.id,
        client_id_issued_at: Math.floor(now.getTime() / 1000),
        client_name: row.client_name,
        redirect_uris: JSON.parse(row.redirect_uris) as string[],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
    },

    /**
     * GET /oauth/authorize. Until the client and its redirect URI are known good, every problem is a
     * page of our own (redirecting would make this server an open redirector); after, the browser is
     * sent back to the client with `error`, `state` and `iss`.
     */
    async authorize(params: AuthorizeParams): Promise<AuthorizeOutcome> {
      const clientId = params.client_id;
      if (!clientId) return { kind: 'error_page', status: 400, message: 'The request has no client_id: the app that sent you here is misconfigured.' };
      let client: ResolvedClient | undefined;
      try {
        client = await findClient(clientId);
      } catch (error) {
        if (error instanceof ClientDocumentError) return { kind: 'error_page', status: 400, message: error.message };
        throw error;
      }
      if (!client)
        return { kind: 'error_page', status: 400, message: 'The client_id is not a client of this server (registrations unused for 30 days expire).' };
      const redirectUri = params.redirect_uri;
      if (!redirectUri) return { kind: 'error_page', status: 400, message: 'The request has no redirect_uri: it is required.' };
      if (!client.redirectUris.some((registered) => redirectUriMatches(registered, redirectUri))) {
        return { kind: 'error_page', status: 400, message: `The redirect_uri is not one the client ${client.name} registered, so you are not sent there.` };
      }
      const state = params.state ?? null;
      const fail = (error: string, description: string) => errorRedirect({ redirectUri, state }, error, description);

      if (params.response_type !== 'code') return fail('unsupported_response_type', 'response_type must be code.');
      if (!params.code_challenge) return fail('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256.');
      if (params.code_challenge_method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256 (plain is not accepted).');
      if (!CODE_CHALLENGE.test(params.code_challenge))
        return fail('invalid_request', 'code_challenge must be the base64url SHA-256 of the verifier (43 characters).');
      const resource = params.resource ?? resources.v1;
      if (!knownResources.includes(resource)) return fail('invalid_target', `resource must be ${resources.v1} or ${resources.mcp}.`);
      const asked = params.scope === undefined ? [...OAUTH_SCOPES] : params.scope.split(' ').filter((scope) => scope !== '');
      const unknown = asked.find((scope) => !SCOPES.includes(scope as Scope));
      if (unknown !== undefined) return fail('invalid_scope', `${unknown} is not a scope of this service.`);
      // keys:write is dropped, never granted: key management happens only in the dashboard.
      const scopes = OAUTH_SCOPES.filter((scope) => asked.includes(scope));
      if (scopes.length === 0) return fail('invalid_scope', 'No scope an app may hold was requested (keys:write is never granted).');

      const request: SealedRequest = {
        clientId: client.id,
        clientName: client.name,
        clientVerified: client.verified,
        redirectUri,
        codeChallenge: params.code_challenge,
        resource,
        scopes,
        state,
        expiresAt: clock.now().getTime() + CONSENT_PAGE_TTL_MS,
      };
      return { kind: 'sign_in', status: 200, view: { client: clientView(request), scopes, resource, request: seal(SEAL_REQUEST, request) } };
    },

    /** The consent page's first form: the person proves who they are with their dashboard password. */
    async signIn(input: SignInInput): Promise<AuthorizeOutcome> {
      const request = open<SealedRequest>(SEAL_REQUEST, input.request);
      if (!request) return expiredPage;
      try {
        const { userId } = await auth.verifyPassword(input.email, input.password);
        return await consentView(request, userId, input.email);
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'login_failed') throw error;
        return {
          kind: 'sign_in',
          status: 401,
          view: {
            client: clientView(request),
            scopes: request.scopes,
            resource: request.resource,
            request: input.request,
            error: error.message,
            email: input.email,
          },
        };
      }
    },

    /** The consent page's second form: the organization and scopes chosen, approved or denied. */
    async decide(input: ConsentInput): Promise<AuthorizeOutcome> {
      const consent = open<SealedConsent>(SEAL_CONSENT, input.consent);
      if (!consent) return expiredPage;
      if (input.decision === 'deny') return errorRedirect(consent, 'access_denied', 'The person declined to authorize the app.');
      const memberships = await members.listMembershipsOfUser(consent.userId);
      const member: Member | undefined = memberships.find((membership) => membership.organization_id === input.organization_id);
      if (!member) return { kind: 'error_page', status: 400, message: 'Choose one of your organizations.' };
      const selected = input.scope === undefined ? [] : Array.isArray(input.scope) ? input.scope : [input.scope];
      const scopes = grantableFor(member.role, consent.scopes).filter((scope) => selected.includes(scope));
      if (scopes.length === 0) return errorRedirect(consent, 'access_denied', 'No scope was granted.');
      const code = randomToken(32);
      const now = clock.now();
      await db.transaction().execute(async (trx) => {
        await store.insertCode(trx, {
          code_hash: sha256Hex(code),
          organization_id: member.organization_id,
          member_id: member.id,
          client_id: consent.clientId,
          client_name: consent.clientName,
          client_verified: consent.clientVerified ? 1 : 0,
          redirect_uri: consent.redirectUri,
          code_challenge: consent.codeChallenge,
          resource: consent.resource,
          scopes: JSON.stringify(scopes),
          created_at: now.toISOString(),
          expires_at: new Date(now.getTime() + AUTHORIZATION_CODE_TTL_MS).toISOString(),
          used_at: null,
          grant_id: null,
        });
        await touchClient(trx, consent.clientId, now.toISOString());
      });
      return redirectWith(consent.redirectUri, { code, state: consent.state });
    },

    /** POST /oauth/token: `authorization_code` and `refresh_token`. */
    async token(input: TokenInput): Promise<TokenResponse> {
      if (input.grant_type !== 'authorization_code' && input.grant_type !== 'refresh_token') {
        throw new OauthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.');
      }
      await requireTokenClient(input.client_id);
      return input.grant_type === 'authorization_code' ? exchangeCode(input) : refresh(input);
    },

    /**
     * RFC 7009. A refresh token revokes its whole grant; an access token only itself. A token that is
     * unknown, already revoked or another client's changes nothing, and the answer is the same.
     */
    async revoke(input: RevokeInput): Promise<void> {
      await requireTokenClient(input.client_id);
      const row = await store.findRefreshToken(db, sha256Hex(input.token));
      if (row) {
        await db.transaction().execute(async (trx) => {
          const grant = await store.findGrant(trx, row.grant_id);
          if (grant && grant.client_id === input.client_id && grant.revoked_at === null) await revokeFamily(trx, grant.id);
        });
        return;
      }
      await oauthTokens.revokePresented(input.token, input.client_id);
    },

    /** The grants of the organization: owners and admins see every one, other members their own. */
    async listAuthorizedApps(principal: Principal, page: PageRequest): Promise<Page<AuthorizedApp>> {
      return mapPage(await store.listGrants(db, principal.organizationId, ownOnly(principal), page), toAuthorizedApp);
    },

    /** Revokes a grant and all its tokens. Another organization's, or (for agents and viewers) another member's, is not found. */
    async revokeAuthorizedApp(actor: Actor, id: string): Promise<{ id: string; object: 'authorized_app'; deleted: true }> {
      const { principal } = actor;
      return db.transaction().execute(async (trx) => {
        const grant = await store.findActiveGrant(trx, principal.organizationId, id);
        const own = ownOnly(principal);
        if (!grant || (own !== undefined && grant.member_id !== own)) throw notFound('authorized app');
        await revokeFamily(trx, grant.id);
        await audit.record(trx, actor, {
          action: 'authorized_app.revoked',
          target: { type: 'authorized_app', id: grant.id },
          data: { client_id: grant.client_id, client_name: grant.client_name, member_id: grant.member_id },
        });
        return { id: grant.id, object: 'authorized_app' as const, deleted: true as const };
      });
    },

    /** A member who leaves takes their consents with them, in the removal's transaction. */
    async revokeGrantsOf(trx: Trx, member: Member): Promise<void> {
      for (const id of await store.activeGrantIdsOfMember(trx, member.organization_id, member.id)) await revokeFamily(trx, id);
    },

    /** The hourly purge: expired codes and refresh tokens, clients unused for 30 days, grants dead for 30 days. */
    async purge(limit: number): Promise<number> {
      const now = clock.now().getTime();
      const monthAgo = new Date(now - CLIENT_UNUSED_TTL_MS).toISOString();
      return store.purge(
        db,
        { codesBefore: new Date(now - DAY).toISOString(), refreshBefore: nowIso(), clientsUnusedSince: monthAgo, grantsUnusedSince: monthAgo },
        limit,
      );
    },
  };
}

/** Owners and admins manage every grant of the organization; other members only their own. */
function ownOnly(principal: Principal): string | undefined {
  if (principal.role === 'owner' || principal.role === 'admin') return undefined;
  if (principal.memberId === null) throw new AppError('credential_kind_not_allowed', 'Authorized apps are managed with a dashboard token.');
  return principal.memberId;
}

export type OauthService = ReturnType<typeof createOauthService>;
