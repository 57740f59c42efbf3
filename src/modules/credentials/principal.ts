import type { ConnectionScope } from '../../db/connection-scope.ts';
import type { CredentialKind, Mode, Role, Scope } from './scopes.schemas.ts';

/** Who is calling: the resolved credential, attached to every authenticated request. */
export interface Principal {
  readonly kind: CredentialKind;
  /** The credential's record (`key_…`, `otk_…` or `ses_…`; never the secret itself), for the audit log. */
  readonly credentialId: string;
  readonly organizationId: string;
  /** Dashboard tokens only. */
  readonly memberId: string | null;
  readonly role: Role | null;
  /** API keys carry a mode; dashboard and OAuth tokens see both modes (null). */
  readonly mode: Mode | null;
  /** Connection keys only: the one connection they grant. */
  readonly connectionId: string | null;
  readonly scopes: ReadonlySet<Scope>;
  /** Dashboard tokens only: when the person last proved who they are with their password (the session's start). */
  readonly signedInAt?: string;
  /** Dashboard tokens only: when this token stops being accepted (ISO 8601), so a long-lived response (the live stream) can end then. */
  readonly expiresAt?: string;
  /** OAuth tokens only: the API the token was issued for (RFC 8707 `resource`), `<base>/v1` or `<base>/mcp`; null: /v1, issued before grants. */
  readonly resource?: string | null;
  /**
   * OAuth tokens only: the app the token was issued to (its client id, null for a token issued
   * outside a grant) and the grant and member behind it, so that the audit log names the app.
   */
  readonly oauthClient?: OauthClientOfPrincipal;
}

export interface OauthClientOfPrincipal {
  readonly id: string | null;
  readonly name: string;
  readonly grantId: string | null;
  /** The member who consented. Not `memberId`: an app acts with the member's scopes, never as the member (it cannot hold their locks or decide their approvals). */
  readonly memberId: string | null;
}

/** What a service needs to know about the caller to authorise and audit a change. */
export interface Actor {
  readonly principal: Principal;
  readonly requestId: string;
}

/**
 * What belongs to a connection is visible when its connection is: a connection key sees its own
 * connection only, a test key only test connections, a live key, a dashboard or OAuth token all.
 */
export function connectionScopeOf(principal: Principal): ConnectionScope {
  return {
    organizationId: principal.organizationId,
    connectionId: principal.connectionId,
    test: principal.mode === 'test' ? true : undefined,
  };
}
