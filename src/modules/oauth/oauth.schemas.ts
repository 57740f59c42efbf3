import Type, { type Static } from 'typebox';
import { Id, ListOf, ListQuery, Timestamp } from '../../http/schemas.ts';
import { SCOPES } from '../credentials/scopes.schemas.ts';

/**
 * The OAuth endpoints speak OAuth, not the /v1 conventions: form-encoded requests, RFC 6749 error
 * bodies, and unknown parameters ignored (RFC 6749 §3.1, RFC 7591 §2), so their request schemas are
 * open objects. Only /v1/authorized-apps follows the /v1 rules.
 */

const Param = (description: string, maxLength = 2048) => Type.Optional(Type.String({ maxLength, description }));

export const AuthorizationServerMetadataSchema = Type.Object(
  {
    issuer: Type.String(),
    authorization_endpoint: Type.String(),
    token_endpoint: Type.String(),
    registration_endpoint: Type.String(),
    revocation_endpoint: Type.String(),
    response_types_supported: Type.Array(Type.String()),
    grant_types_supported: Type.Array(Type.String()),
    code_challenge_methods_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
    authorization_response_iss_parameter_supported: Type.Boolean(),
    client_id_metadata_document_supported: Type.Boolean(),
  },
  { description: 'RFC 8414 authorization server metadata.' },
);
export type AuthorizationServerMetadata = Static<typeof AuthorizationServerMetadataSchema>;

export const ProtectedResourceMetadataSchema = Type.Object(
  {
    resource: Type.String(),
    authorization_servers: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
    bearer_methods_supported: Type.Array(Type.String()),
    resource_name: Type.String(),
  },
  { description: 'RFC 9728 protected resource metadata.' },
);
export type ProtectedResourceMetadata = Static<typeof ProtectedResourceMetadataSchema>;

export const OauthErrorSchema = Type.Object(
  { error: Type.String(), error_description: Type.Optional(Type.String()) },
  { description: 'An OAuth error (RFC 6749 §5.2, RFC 7591 §3.2.2): `error` is the code, `error_description` says why.' },
);

export const RegisterClientBody = Type.Object(
  {
    redirect_uris: Type.Array(Type.String({ maxLength: 2000 }), {
      minItems: 1,
      maxItems: 10,
      description:
        'Where the authorization server may send the browser back: https URLs, or http on a loopback address (127.0.0.1, [::1], localhost). No fragments.',
    }),
    client_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Shown on the consent page, marked unverified.' })),
    token_endpoint_auth_method: Type.Optional(Type.String({ description: 'Only `none`: clients are public and prove themselves with PKCE.' })),
    grant_types: Type.Optional(Type.Array(Type.String(), { description: 'Within `authorization_code` and `refresh_token`.' })),
    response_types: Type.Optional(Type.Array(Type.String(), { description: 'Only `code`.' })),
  },
  { additionalProperties: true, description: 'RFC 7591 client metadata; fields not listed here are accepted and ignored.' },
);
export type RegisterClientInput = Static<typeof RegisterClientBody>;

export const RegisteredClientSchema = Type.Object({
  client_id: Type.String(),
  client_id_issued_at: Type.Integer(),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.Literal('none'),
});
export type RegisteredClient = Static<typeof RegisteredClientSchema>;

export const AuthorizeQuery = Type.Object(
  {
    response_type: Param('`code`.', 100),
    client_id: Param('A registered client id (`oac_…`) or the https URL of a client ID metadata document.'),
    redirect_uri: Param('One of the client’s redirect URIs, exactly.'),
    scope: Param('Space-separated scopes; omitted: every scope an app may hold. `keys:write` is never granted.'),
    state: Param('Returned unchanged with the answer.'),
    code_challenge: Param('PKCE: base64url(SHA-256(code_verifier)).', 128),
    code_challenge_method: Param('`S256` (plain is refused).', 20),
    resource: Param('RFC 8707: `<base>/v1` (the default) or `<base>/mcp`.'),
  },
  { additionalProperties: true },
);
export type AuthorizeParams = Static<typeof AuthorizeQuery>;

export const SignInForm = Type.Object(
  {
    request: Type.String({ maxLength: 8192, description: 'The sealed authorization request the page carries.' }),
    email: Type.String({ maxLength: 254 }),
    password: Type.String({ maxLength: 200 }),
  },
  { additionalProperties: true },
);
export type SignInInput = Static<typeof SignInForm>;

export const ConsentForm = Type.Object(
  {
    consent: Type.String({ maxLength: 8192, description: 'The sealed, signed-in authorization request the page carries.' }),
    decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]),
    organization_id: Type.Optional(Type.String({ maxLength: 64 })),
    scope: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Array(Type.String({ maxLength: 64 }), { maxItems: SCOPES.length })])),
  },
  { additionalProperties: true },
);
export type ConsentInput = Static<typeof ConsentForm>;

export const TokenForm = Type.Object(
  {
    grant_type: Type.String({ maxLength: 100, description: '`authorization_code` or `refresh_token`.' }),
    client_id: Type.String({ maxLength: 2048 }),
    code: Param('authorization_code: the code.', 512),
    redirect_uri: Param('authorization_code: the redirect URI of the authorization request.'),
    code_verifier: Param('authorization_code: the PKCE verifier.', 256),
    refresh_token: Param('refresh_token: the refresh token.', 512),
    scope: Param('refresh_token: narrower scopes for the new access token.'),
    resource: Param('RFC 8707: must be the resource of the grant.'),
  },
  { additionalProperties: true },
);
export type TokenInput = Static<typeof TokenForm>;

export const TokenResponseSchema = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_token: Type.String(),
  scope: Type.String(),
});
export type TokenResponse = Static<typeof TokenResponseSchema>;

export const RevokeForm = Type.Object(
  {
    token: Type.String({ maxLength: 512 }),
    token_type_hint: Param('`access_token` or `refresh_token` (both are tried either way).', 100),
    client_id: Type.String({ maxLength: 2048 }),
  },
  { additionalProperties: true },
);
export type RevokeInput = Static<typeof RevokeForm>;

export const AuthorizedAppSchema = Type.Object(
  {
    id: Id('oauthGrant'),
    object: Type.Literal('authorized_app'),
    client: Type.Object({
      id: Type.String({ description: 'A registered client id (`oac_…`) or the URL of its client ID metadata document.' }),
      name: Type.String(),
      verified: Type.Boolean({
        description:
          'true for a client identified by its metadata document URL (its host vouches for it); false for a dynamically registered one, whose name is its own claim.',
      }),
    }),
    member_id: Id('member', 'The member who gave the consent.'),
    scopes: Type.Array(Type.Enum(SCOPES), { description: 'What was granted; each use is further bounded by the member’s current role.' }),
    resource: Type.String({ description: 'The API the tokens are for: `<base>/v1` or `<base>/mcp`.' }),
    created_at: Timestamp,
    last_used_at: Type.String({ format: 'date-time', description: 'The last time the app obtained or refreshed a token.' }),
  },
  { description: 'One consent a member gave an app (an OAuth grant): its refresh and access tokens live until it is revoked.' },
);
export type AuthorizedApp = Static<typeof AuthorizedAppSchema>;
export const AuthorizedAppListQuery = ListQuery();
export const AuthorizedAppListSchema = ListOf(AuthorizedAppSchema);
