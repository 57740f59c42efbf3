import type { FastifyRequest } from 'fastify';
import { AppError } from '../lib/errors.ts';
import type { Principal } from '../modules/credentials/principal.ts';
import type { CredentialKind, Role, Scope } from '../modules/credentials/scopes.schemas.ts';
import { routeMethods } from './route-hooks.ts';
import type { HttpServer } from './server.ts';

/**
 * Every route declares who may call it in `config.access`; a route without a declaration fails at
 * start-up, so no endpoint can ship unguarded. The declarations are also the endpoint→scope table
 * that the docs print (`accessTable`).
 */
export type Access =
  | {
      readonly public: true;
      readonly reason: string;
      /** false: never rate limited, for what probes and browsers fetch freely (health, documentation). */
      readonly rateLimit?: false;
    }
  | {
      readonly public?: false;
      /** null: any authenticated credential may call (identity). */
      readonly scope: Scope | null;
      /** Default: every kind. */
      readonly credentials?: readonly CredentialKind[];
      /** For dashboard tokens: the member roles allowed. */
      readonly roles?: readonly Role[];
      /**
       * How a credential of a kind not in `credentials` is refused: `403 credential_kind_not_allowed`
       * (the default), or `401 credential_invalid` where the callers are OAuth clients (the tool
       * server), which obtain a token when answered 401 but on a 403 only ask for more scopes.
       */
      readonly otherKinds?: 'forbidden' | 'unauthenticated';
    };

export interface AccessRow {
  method: string;
  url: string;
  access: Access;
}

/** A principal, at once where it is remembered; a refusal is thrown or rejected. */
export type Authenticate = (bearer: string) => Principal | Promise<Principal>;

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    principal: Principal | undefined;
  }
}

const CREDENTIAL_NAMES: Record<CredentialKind, string> = {
  connection_key: 'a connection key',
  organization_key: 'an organization key',
  oauth_token: 'an OAuth token',
  dashboard_token: 'a dashboard token',
};

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;

/**
 * The credential of an `Authorization: Bearer <credential>` header: undefined without the header,
 * `credential_invalid` for a header of another form. For a public route that reads a credential when
 * one is sent (accepting an invite); every other route goes through the hook below.
 */
export function bearerCredential(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = BEARER.exec(header);
  if (!match?.[1]) throw new AppError('credential_invalid', 'The Authorization header must be `Bearer <credential>`.');
  return match[1];
}

export function requirePrincipal(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error(`route ${request.routeOptions.url ?? ''} has no authenticated principal`);
  return request.principal;
}

export interface AccessOptions {
  /**
   * The /v1 API's resource URL (`<PUBLIC_BASE_URL>/v1`): an OAuth token issued for another resource
   * (RFC 8707 audience; the tool server's `/mcp`) is refused on /v1 routes. A token with no resource
   * (issued before grants existed) is a /v1 token.
   */
  v1Resource: string;
}

export function registerAccessControl(app: HttpServer, authenticate: Authenticate, options: AccessOptions): AccessRow[] {
  const table: AccessRow[] = [];
  app.decorateRequest('principal', undefined);

  app.addHook('onRoute', (route) => {
    const access = route.config?.access;
    if (!access) throw new Error(`route ${String(route.method)} ${route.url} declares no access rule`);
    const methods = routeMethods(route);
    for (const method of methods) if (method !== 'HEAD') table.push({ method, url: route.url, access });
  });

  // A callback, not an async function: a credential remembered from the last second is checked with
  // no promise at all, on the path every /v1 request takes.
  app.addHook('onRequest', (request, _reply, done) => {
    const access = request.routeOptions.config.access;
    if (!access || access.public) {
      done();
      return;
    }
    let principal: Principal | Promise<Principal>;
    try {
      const credential = bearerCredential(request.headers.authorization);
      if (credential === undefined) throw new AppError('credential_missing', 'Send a credential in the Authorization header: `Bearer <credential>`.');
      principal = authenticate(credential);
    } catch (error) {
      done(error as AppError);
      return;
    }
    // A fault in admit itself reaches done as an error too, never an unhandled rejection.
    if (principal instanceof Promise) principal.then((resolved) => admit(request, resolved, access)).then(done, done);
    else done(admit(request, principal, access));
  });

  /** Attaches the principal; the refusal, if its credential may not call the route. */
  function admit(request: FastifyRequest, principal: Principal, access: Extract<Access, { scope: unknown }>): AppError | undefined {
    // Attached before the checks below so that a refused (403) request is still charged to its
    // credential's rate-limit bucket rather than to its source address.
    request.principal = principal;

    if (principal.kind === 'oauth_token' && principal.resource && principal.resource !== options.v1Resource && request.routeOptions.url?.startsWith('/v1/')) {
      return new AppError(
        'credential_invalid',
        `This OAuth token was issued for ${principal.resource}; the /v1 API accepts only tokens issued for ${options.v1Resource} (the \`resource\` of the authorization request).`,
      );
    }

    if (access.credentials && !access.credentials.includes(principal.kind)) {
      if (access.otherKinds === 'unauthenticated') {
        const accepted = access.credentials.map((kind) => CREDENTIAL_NAMES[kind]).join(' or ');
        return new AppError('credential_invalid', `This endpoint takes only ${accepted}, not ${CREDENTIAL_NAMES[principal.kind]}.`);
      }
      return new AppError('credential_kind_not_allowed', `This endpoint does not accept ${CREDENTIAL_NAMES[principal.kind]}.`, {
        extra: { allowed_credentials: access.credentials },
      });
    }
    if (access.roles && principal.role && !access.roles.includes(principal.role)) {
      return new AppError('role_insufficient', `This endpoint is for ${access.roles.join(' or ')} members.`, {
        extra: { allowed_roles: access.roles },
      });
    }
    if (access.scope && !principal.scopes.has(access.scope)) {
      return new AppError('scope_missing', `This endpoint requires the ${access.scope} scope.`, { extra: { required_scope: access.scope } });
    }
    return undefined;
  }

  return table;
}
