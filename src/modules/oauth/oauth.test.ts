import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { before, describe, it } from 'node:test';
import * as oauth from 'oauth4webapi';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { DAY, HOUR, MINUTE, SECOND } from '../../lib/clock.ts';
import { startServer, suiteScope, type TestServer } from '../../../test/harness.ts';
import { addMember, assertError, createConnection, signUp, type SignedUp } from '../../../test/factories.ts';
import { consentInBrowser, publicFetch, TestMcpClient, type ConsentChoice } from '../../../test/oauth-browser.ts';

const REDIRECT_URI = 'http://127.0.0.1:4567/callback';

/** oauth4webapi as a strict client of the test server: http allowed (loopback), requests sent to the listening port. */
function clientOptions(server: TestServer) {
  return { [oauth.customFetch]: publicFetch(server), [oauth.allowInsecureRequests]: true };
}

async function discover(server: TestServer): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(server.config.publicBaseUrl);
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...clientOptions(server) }));
}

async function register(server: TestServer, as: oauth.AuthorizationServer, metadata: Partial<oauth.Client> = {}): Promise<oauth.Client> {
  const response = await oauth.dynamicClientRegistrationRequest(
    as,
    { redirect_uris: [REDIRECT_URI], client_name: 'Acme CRM', token_endpoint_auth_method: 'none', ...metadata },
    clientOptions(server),
  );
  return oauth.processDynamicClientRegistrationResponse(response);
}

interface Authorization {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  verifier: string;
  state: string;
  url: URL;
}

/** An authorization request as a PKCE client builds it; `params` adds or overrides parameters. */
async function authorizationRequest(server: TestServer, params: Record<string, string> = {}, client?: oauth.Client): Promise<Authorization> {
  const as = await discover(server);
  const registered = client ?? (await register(server, as));
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  const all: Record<string, string> = {
    response_type: 'code',
    client_id: registered.client_id,
    redirect_uri: REDIRECT_URI,
    scope: 'messages:read messages:write contacts:read connections:read connections:write',
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...params,
  };
  for (const [name, value] of Object.entries(all)) url.searchParams.set(name, value);
  return { as, client: registered, verifier, state, url };
}

/** The whole flow up to the tokens: consent in the browser, then the code exchanged with its verifier. */
async function authorize(
  server: TestServer,
  person: { email: string; password: string },
  options: { params?: Record<string, string>; choice?: Partial<ConsentChoice> } = {},
) {
  const request = await authorizationRequest(server, options.params);
  const pages = await consentInBrowser(server, request.url, { ...person, ...options.choice });
  const callback = oauth.validateAuthResponse(request.as, request.client, pages.callback, request.state);
  const response = await oauth.authorizationCodeGrantRequest(
    request.as,
    request.client,
    oauth.None(),
    callback,
    REDIRECT_URI,
    request.verifier,
    clientOptions(server),
  );
  const tokens = await oauth.processAuthorizationCodeResponse(request.as, request.client, response);
  return { ...request, pages, callback, tokens };
}

function refresh(server: TestServer, flow: { as: oauth.AuthorizationServer; client: oauth.Client }, refreshToken: string) {
  return oauth.refreshTokenGrantRequest(flow.as, flow.client, oauth.None(), refreshToken, clientOptions(server));
}

/** The OAuth error a response carries, as oauth4webapi reads it. */
async function oauthErrorOf(work: Promise<unknown>): Promise<{ error: string; status: number; description: string | undefined }> {
  try {
    await work;
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return { error: error.error, status: error.status, description: error.error_description };
    if (error instanceof oauth.AuthorizationResponseError) return { error: error.error, status: 302, description: error.error_description };
    throw error;
  }
  assert.fail('expected an OAuth error');
}

const identity = (server: TestServer, token: string) => server.request('GET', '/v1/identity', { token });

/** A fresh dashboard token: tests move the clock by days, past the 15 minutes of the one sign-up gave. */
async function dashboardToken(server: TestServer, person: { email: string; password: string }): Promise<string> {
  const response = await server.request('POST', '/auth/login', { body: { email: person.email, password: person.password } });
  assert.equal(response.status, 200, response.text);
  return response.body.token;
}

function signIn(server: TestServer, fields: Record<string, string>) {
  return server.request('POST', '/oauth/authorize/sign-in', {
    rawBody: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
}

async function get(server: TestServer, url: URL | string) {
  const response = await publicFetch(server)(String(url), { redirect: 'manual' });
  return { status: response.status, location: response.headers.get('location'), text: await response.text(), headers: response.headers };
}

describe('OAuth: the authorization server, driven by oauth4webapi', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server, { organizationName: 'Acme' });
  });

  describe('discovery and registration', () => {
    it('the metadata names the endpoints, S256 only, public clients, iss in answers, and never keys:write', async () => {
      const as = await discover(server);
      assert.equal(as.issuer, server.config.publicBaseUrl);
      assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
      assert.deepEqual(as.response_types_supported, ['code']);
      assert.deepEqual(as.token_endpoint_auth_methods_supported, ['none']);
      assert.deepEqual(as.grant_types_supported, ['authorization_code', 'refresh_token']);
      assert.equal(as.authorization_response_iss_parameter_supported, true);
      assert.equal(as.client_id_metadata_document_supported, true);
      assert.ok(as.scopes_supported!.includes('messages:write'));
      assert.ok(!as.scopes_supported!.includes('keys:write'));
    });

    it('each resource has its protected-resource metadata pointing at this server', async () => {
      for (const which of ['mcp', 'v1']) {
        const response = await server.request('GET', `/.well-known/oauth-protected-resource/${which}`);
        assert.equal(response.status, 200);
        assert.equal(response.body.resource, `${server.config.publicBaseUrl}/${which}`);
        assert.deepEqual(response.body.authorization_servers, [server.config.publicBaseUrl]);
        assert.deepEqual(response.body.bearer_methods_supported, ['header']);
        assert.ok(!response.body.scopes_supported.includes('keys:write'));
      }
    });

    it('registration gives a public client; unknown metadata is ignored', async () => {
      const client = await register(server, await discover(server), { client_uri: 'https://crm.example' });
      assert.match(client.client_id, /^oac_/);
      assert.equal(client.token_endpoint_auth_method, 'none');
      assert.deepEqual(client.redirect_uris, [REDIRECT_URI]);
      assert.equal(client.client_secret, undefined);
    });

    it('registration refuses a redirect URI that is neither https nor loopback http, a fragment, and a client secret method', async () => {
      const post = (body: unknown) => server.request('POST', '/oauth/register', { body });
      for (const uri of ['http://crm.example/callback', 'https://crm.example/cb#frag', 'javascript:alert(1)', 'not a url']) {
        const response = await post({ redirect_uris: [uri] });
        assert.equal(response.status, 400, uri);
        assert.equal(response.body.error, 'invalid_redirect_uri', uri);
      }
      const secret = await post({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'client_secret_basic' });
      assert.equal(secret.body.error, 'invalid_client_metadata');
      const none = await post({ redirect_uris: [] });
      assert.equal(none.body.error, 'invalid_client_metadata');
      assert.equal(none.headers.get('cache-control'), 'no-store');
    });

    it('a registered client unused for 30 days expires', async () => {
      const as = await discover(server);
      const client = await register(server, as);
      server.clock.advance(31 * DAY);
      const request = await authorizationRequest(server, {}, client);
      const page = await get(server, request.url);
      assert.equal(page.status, 400);
      assert.equal(page.location, null);
      assert.match(page.text, /not a client of this server/);
    });
  });

  describe('the whole flow', () => {
    it('consent, code, token: the token reaches /v1 with the scopes granted, for its organization', async () => {
      const flow = await authorize(server, owner);
      assert.match(flow.pages.signInPage, /Unverified app/);
      assert.match(flow.pages.signInPage, /Acme CRM/);
      assert.match(flow.pages.signInPage, /127\.0\.0\.1:4567/);
      assert.match(flow.pages.consentPage, /Acme/);
      assert.ok(flow.callback.get('code'), 'validateAuthResponse checked iss and state, and found a code');
      assert.equal(flow.tokens.token_type, 'bearer');
      assert.equal(flow.tokens.expires_in, 3600);
      assert.match(flow.tokens.access_token, /^oat_/);
      assert.match(flow.tokens.refresh_token!, /^ort_/);
      assert.equal(flow.tokens.scope, 'messages:read messages:write contacts:read connections:read connections:write');
      const who = await identity(server, flow.tokens.access_token);
      assert.equal(who.status, 200, who.text);
      assert.equal(who.body.organization.id, owner.organizationId);
      assert.equal(who.body.credential.kind, 'oauth_token');
      assert.deepEqual(who.body.scopes, ['messages:read', 'messages:write', 'contacts:read', 'connections:read', 'connections:write']);
    });

    it('the token response is not cached', async () => {
      const request = await authorizationRequest(server);
      const pages = await consentInBrowser(server, request.url, owner);
      const response = await oauth.authorizationCodeGrantRequest(
        request.as,
        request.client,
        oauth.None(),
        oauth.validateAuthResponse(request.as, request.client, pages.callback, request.state),
        REDIRECT_URI,
        request.verifier,
        clientOptions(server),
      );
      assert.equal(response.headers.get('cache-control'), 'no-store');
      await oauth.processAuthorizationCodeResponse(request.as, request.client, response);
    });

    it('the person picks the scopes: unticked ones are not granted', async () => {
      const flow = await authorize(server, owner, { choice: { scopes: ['messages:read'] } });
      assert.equal(flow.tokens.scope, 'messages:read');
      assertError(await server.request('GET', '/v1/connections', { token: flow.tokens.access_token }), 403, 'scope_missing');
    });

    it('a member of two organizations picks the one the app gets', async () => {
      const other = await signUp(server, { organizationName: 'Other' });
      const member = await addMember(server, other.organizationId, 'admin');
      // The admin of Other also joins Acme as a viewer.
      const user = await server.app.services.members.findUserByEmail(member.email);
      await server.app.store.db
        .transaction()
        .execute((trx) => server.app.services.members.addMember(trx, { organizationId: owner.organizationId, userId: user!.id, role: 'viewer' }));
      const flow = await authorize(server, member, { choice: { organizationId: owner.organizationId } });
      assert.match(flow.pages.consentPage, /Other/);
      const who = await identity(server, flow.tokens.access_token);
      assert.equal(who.body.organization.id, owner.organizationId);
      // A viewer grants only what a viewer holds.
      assert.deepEqual(who.body.scopes, ['messages:read', 'contacts:read', 'connections:read']);
    });

    it('a wrong password re-renders the sign-in page, and nothing is issued', async () => {
      const request = await authorizationRequest(server);
      const opened = await get(server, request.url);
      const sealed = /name="request" value="([^"]+)"/.exec(opened.text)![1]!;
      const again = await signIn(server, { request: sealed, email: owner.email, password: 'not the password at all' });
      assert.equal(again.status, 401);
      assert.match(again.text, /The email or password is incorrect/);
      assert.match(again.text, /name="request"/);
      assert.ok(!again.text.includes('name="consent"'));
    });

    it('denying sends the browser back with access_denied, the state and the issuer', async () => {
      const request = await authorizationRequest(server);
      const pages = await consentInBrowser(server, request.url, { ...owner, decision: 'deny' });
      assert.equal(pages.callback.searchParams.get('error'), 'access_denied');
      assert.equal(pages.callback.searchParams.get('state'), request.state);
      assert.equal(pages.callback.searchParams.get('iss'), server.config.publicBaseUrl);
    });

    it('refresh rotates: each use answers a new refresh token, and the new access token works', async () => {
      const flow = await authorize(server, owner);
      const rotated = await oauth.processRefreshTokenResponse(flow.as, flow.client, await refresh(server, flow, flow.tokens.refresh_token!));
      assert.notEqual(rotated.refresh_token, flow.tokens.refresh_token);
      assert.notEqual(rotated.access_token, flow.tokens.access_token);
      assert.equal((await identity(server, rotated.access_token)).status, 200);
      const again = await oauth.processRefreshTokenResponse(flow.as, flow.client, await refresh(server, flow, rotated.refresh_token!));
      assert.equal((await identity(server, again.access_token)).status, 200);
    });

    it('a refresh may narrow the scopes, never widen them', async () => {
      const flow = await authorize(server, owner);
      const narrowed = await oauth.processRefreshTokenResponse(
        flow.as,
        flow.client,
        await oauth.refreshTokenGrantRequest(flow.as, flow.client, oauth.None(), flow.tokens.refresh_token!, {
          ...clientOptions(server),
          additionalParameters: { scope: 'messages:read' },
        }),
      );
      assert.equal(narrowed.scope, 'messages:read');
      const wider = await oauthErrorOf(
        oauth
          .refreshTokenGrantRequest(flow.as, flow.client, oauth.None(), narrowed.refresh_token!, {
            ...clientOptions(server),
            additionalParameters: { scope: 'templates:write' },
          })
          .then((response) => oauth.processRefreshTokenResponse(flow.as, flow.client, response)),
      );
      assert.equal(wider.error, 'invalid_scope');
    });

    it('revoking the refresh token revokes the grant: its access token stops at once, and the refresh token too', async () => {
      const flow = await authorize(server, owner);
      await oauth.processRevocationResponse(
        await oauth.revocationRequest(flow.as, flow.client, oauth.None(), flow.tokens.refresh_token!, clientOptions(server)),
      );
      assertError(await identity(server, flow.tokens.access_token), 401, 'credential_revoked');
      const refused = await oauthErrorOf(
        refresh(server, flow, flow.tokens.refresh_token!).then((r) => oauth.processRefreshTokenResponse(flow.as, flow.client, r)),
      );
      assert.equal(refused.error, 'invalid_grant');
    });

    it('a revoked access token is credential_revoked; revoking an unknown token still answers 200', async () => {
      const flow = await authorize(server, owner);
      await oauth.processRevocationResponse(await oauth.revocationRequest(flow.as, flow.client, oauth.None(), flow.tokens.access_token, clientOptions(server)));
      assertError(await identity(server, flow.tokens.access_token), 401, 'credential_revoked');
      await oauth.processRevocationResponse(await oauth.revocationRequest(flow.as, flow.client, oauth.None(), 'oat_nothing', clientOptions(server)));
      // Revoking the access token alone leaves the grant: the app may refresh.
      const rotated = await oauth.processRefreshTokenResponse(flow.as, flow.client, await refresh(server, flow, flow.tokens.refresh_token!));
      assert.equal((await identity(server, rotated.access_token)).status, 200);
    });

    it('another client cannot revoke or refresh with a token it did not get', async () => {
      const flow = await authorize(server, owner);
      const intruder = await register(server, flow.as);
      await oauth.processRevocationResponse(await oauth.revocationRequest(flow.as, intruder, oauth.None(), flow.tokens.refresh_token!, clientOptions(server)));
      assert.equal((await identity(server, flow.tokens.access_token)).status, 200);
      const refused = await oauthErrorOf(
        oauth
          .refreshTokenGrantRequest(flow.as, intruder, oauth.None(), flow.tokens.refresh_token!, clientOptions(server))
          .then((r) => oauth.processRefreshTokenResponse(flow.as, intruder, r)),
      );
      assert.equal(refused.error, 'invalid_grant');
    });

    it('an access token expires after an hour; the refresh token still works for 30 days, not after', async () => {
      const flow = await authorize(server, owner);
      server.clock.advance(HOUR);
      assertError(await identity(server, flow.tokens.access_token), 401, 'credential_expired');
      const rotated = await oauth.processRefreshTokenResponse(flow.as, flow.client, await refresh(server, flow, flow.tokens.refresh_token!));
      server.clock.advance(30 * DAY);
      const expired = await oauthErrorOf(refresh(server, flow, rotated.refresh_token!).then((r) => oauth.processRefreshTokenResponse(flow.as, flow.client, r)));
      assert.equal(expired.error, 'invalid_grant');
    });

    it('a change made with the token is audited naming the app', async () => {
      const ownerToken = await dashboardToken(server, owner);
      const connection = await createConnection(server, { token: ownerToken });
      const flow = await authorize(server, owner);
      const changed = await server.request('PATCH', `/v1/connections/${connection.id}`, {
        token: flow.tokens.access_token,
        body: { name: 'Renamed by the CRM' },
      });
      assert.equal(changed.status, 200, changed.text);
      const events = await server.request('GET', `/v1/events?action=connection.updated&target_id=${connection.id}`, { token: ownerToken });
      const entry = events.body.data[0];
      assert.equal(entry.actor.type, 'oauth_token');
      assert.deepEqual(entry.oauth_client, { id: flow.client.client_id, name: 'Acme CRM' });
    });
  });

  describe('authorized apps', () => {
    it('owners list every grant and revoke one: its tokens stop at once, and the revocation is audited', async () => {
      const ownerToken = await dashboardToken(server, owner);
      const flow = await authorize(server, owner);
      const listed = await server.request('GET', '/v1/authorized-apps?limit=100', { token: ownerToken });
      assert.equal(listed.status, 200, listed.text);
      const app = listed.body.data.find((item: { client: { id: string } }) => item.client.id === flow.client.client_id);
      assert.equal(app.object, 'authorized_app');
      assert.deepEqual(app.client, { id: flow.client.client_id, name: 'Acme CRM', verified: false });
      assert.equal(app.member_id, owner.memberId);
      assert.equal(app.resource, `${server.config.publicBaseUrl}/v1`);
      const removed = await server.request('DELETE', `/v1/authorized-apps/${app.id}`, { token: ownerToken });
      assert.deepEqual(removed.body, { id: app.id, object: 'authorized_app', deleted: true });
      assertError(await identity(server, flow.tokens.access_token), 401, 'credential_revoked');
      const refused = await oauthErrorOf(
        refresh(server, flow, flow.tokens.refresh_token!).then((r) => oauth.processRefreshTokenResponse(flow.as, flow.client, r)),
      );
      assert.equal(refused.error, 'invalid_grant');
      assertError(await server.request('DELETE', `/v1/authorized-apps/${app.id}`, { token: ownerToken }), 404, 'resource_not_found');
      const events = await server.request('GET', `/v1/events?action=authorized_app.revoked&target_id=${app.id}`, { token: ownerToken });
      assert.equal(events.body.data.length, 1);
    });

    it('an agent sees and revokes only their own grants; another organization sees none of them', async () => {
      const ownerToken = await dashboardToken(server, owner);
      const agent = await addMember(server, owner.organizationId, 'agent');
      const mine = await authorize(server, agent);
      const theirs = await authorize(server, owner);
      const listed = await server.request('GET', '/v1/authorized-apps?limit=100', { token: agent.token });
      assert.deepEqual(
        listed.body.data.map((item: { member_id: string }) => item.member_id),
        listed.body.data.map(() => agent.memberId),
      );
      const ownerGrant = (await server.request('GET', '/v1/authorized-apps?limit=100', { token: ownerToken })).body.data.find(
        (item: { client: { id: string } }) => item.client.id === theirs.client.client_id,
      );
      assertError(await server.request('DELETE', `/v1/authorized-apps/${ownerGrant.id}`, { token: agent.token }), 404, 'resource_not_found');
      const stranger = await signUp(server, { organizationName: 'Stranger' });
      assertError(await server.request('DELETE', `/v1/authorized-apps/${ownerGrant.id}`, { token: stranger.token }), 404, 'resource_not_found');
      assert.deepEqual((await server.request('GET', '/v1/authorized-apps', { token: stranger.token })).body.data, []);
      const agentGrant = listed.body.data.find((item: { client: { id: string } }) => item.client.id === mine.client.client_id);
      assert.equal((await server.request('DELETE', `/v1/authorized-apps/${agentGrant.id}`, { token: agent.token })).status, 200);
      assertError(await identity(server, mine.tokens.access_token), 401, 'credential_revoked');
    });

    it('an OAuth token cannot manage authorized apps', async () => {
      const flow = await authorize(server, owner);
      assertError(await server.request('GET', '/v1/authorized-apps', { token: flow.tokens.access_token }), 403, 'credential_kind_not_allowed');
    });
  });

  describe('refused, one rule each', () => {
    it('plain PKCE is refused: the browser goes back with invalid_request', async () => {
      const request = await authorizationRequest(server, { code_challenge_method: 'plain', code_challenge: 'x'.repeat(43) });
      const page = await get(server, request.url);
      assert.equal(page.status, 302);
      const back = new URL(page.location!);
      assert.equal(back.origin + back.pathname, REDIRECT_URI);
      assert.equal(back.searchParams.get('error'), 'invalid_request');
      assert.match(back.searchParams.get('error_description')!, /S256/);
      assert.equal(back.searchParams.get('state'), request.state);
      assert.equal(back.searchParams.get('iss'), server.config.publicBaseUrl);
      const error = await oauthErrorOf(Promise.resolve().then(() => oauth.validateAuthResponse(request.as, request.client, back, request.state)));
      assert.equal(error.error, 'invalid_request');
    });

    it('a request without PKCE is refused the same way', async () => {
      const request = await authorizationRequest(server);
      request.url.searchParams.delete('code_challenge');
      request.url.searchParams.delete('code_challenge_method');
      const back = new URL((await get(server, request.url)).location!);
      assert.equal(back.searchParams.get('error'), 'invalid_request');
    });

    it('a wrong verifier is invalid_grant', async () => {
      const request = await authorizationRequest(server);
      const pages = await consentInBrowser(server, request.url, owner);
      const callback = oauth.validateAuthResponse(request.as, request.client, pages.callback, request.state);
      const error = await oauthErrorOf(
        oauth
          .authorizationCodeGrantRequest(
            request.as,
            request.client,
            oauth.None(),
            callback,
            REDIRECT_URI,
            oauth.generateRandomCodeVerifier(),
            clientOptions(server),
          )
          .then((response) => oauth.processAuthorizationCodeResponse(request.as, request.client, response)),
      );
      assert.deepEqual([error.error, error.status], ['invalid_grant', 400]);
      assert.match(error.description!, /code_verifier/);
    });

    it('a replayed code is refused and revokes the grant it produced, with its tokens', async () => {
      const flow = await authorize(server, owner);
      const replay = await oauthErrorOf(
        oauth
          .authorizationCodeGrantRequest(flow.as, flow.client, oauth.None(), flow.callback, REDIRECT_URI, flow.verifier, clientOptions(server))
          .then((response) => oauth.processAuthorizationCodeResponse(flow.as, flow.client, response)),
      );
      assert.equal(replay.error, 'invalid_grant');
      assertError(await identity(server, flow.tokens.access_token), 401, 'credential_revoked');
      const refused = await oauthErrorOf(
        refresh(server, flow, flow.tokens.refresh_token!).then((r) => oauth.processRefreshTokenResponse(flow.as, flow.client, r)),
      );
      assert.equal(refused.error, 'invalid_grant');
    });

    it('a code lives 60 seconds', async () => {
      const request = await authorizationRequest(server);
      const pages = await consentInBrowser(server, request.url, owner);
      server.clock.advance(61 * SECOND);
      const callback = oauth.validateAuthResponse(request.as, request.client, pages.callback, request.state);
      const error = await oauthErrorOf(
        oauth
          .authorizationCodeGrantRequest(request.as, request.client, oauth.None(), callback, REDIRECT_URI, request.verifier, clientOptions(server))
          .then((response) => oauth.processAuthorizationCodeResponse(request.as, request.client, response)),
      );
      assert.equal(error.error, 'invalid_grant');
    });

    it('a redirect URI the client did not register is an error page, never a redirect', async () => {
      for (const uri of ['https://evil.example/callback', 'http://127.0.0.1:4567/other', `${REDIRECT_URI}?x=1`]) {
        const request = await authorizationRequest(server, { redirect_uri: uri });
        const page = await get(server, request.url);
        assert.equal(page.status, 400, uri);
        assert.equal(page.location, null, uri);
        assert.match(page.headers.get('content-type')!, /^text\/html/);
        assert.match(page.text, /not one the client/);
        assert.ok(!page.text.includes('evil.example'), 'the page does not link to the refused URI');
      }
    });

    it('an unknown client is an error page too, before anything else is read', async () => {
      const request = await authorizationRequest(server, { client_id: 'oac_01M8B8YH89X47AR18H4XZ86KJY', code_challenge_method: 'plain' });
      const page = await get(server, request.url);
      assert.equal(page.status, 400);
      assert.equal(page.location, null);
    });

    it('a loopback redirect URI matches on any port (RFC 8252), nothing else of it', async () => {
      const request = await authorizationRequest(server, { redirect_uri: 'http://127.0.0.1:9999/callback' });
      const pages = await consentInBrowser(server, request.url, owner);
      assert.equal(pages.callback.origin, 'http://127.0.0.1:9999');
    });

    it('refresh token reuse revokes the whole family', async () => {
      const flow = await authorize(server, owner);
      const rotated = await oauth.processRefreshTokenResponse(flow.as, flow.client, await refresh(server, flow, flow.tokens.refresh_token!));
      const reuse = await oauthErrorOf(
        refresh(server, flow, flow.tokens.refresh_token!).then((r) => oauth.processRefreshTokenResponse(flow.as, flow.client, r)),
      );
      assert.equal(reuse.error, 'invalid_grant');
      assert.match(reuse.description!, /already used/);
      assertError(await identity(server, rotated.access_token), 401, 'credential_revoked');
      assertError(await identity(server, flow.tokens.access_token), 401, 'credential_revoked');
      const successor = await oauthErrorOf(
        refresh(server, flow, rotated.refresh_token!).then((r) => oauth.processRefreshTokenResponse(flow.as, flow.client, r)),
      );
      assert.equal(successor.error, 'invalid_grant');
    });

    it('keys:write requested is never granted, and never offered on the consent page', async () => {
      const flow = await authorize(server, owner, { params: { scope: 'keys:write messages:read' } });
      assert.ok(!flow.pages.consentPage.includes('value="keys:write"'));
      assert.equal(flow.tokens.scope, 'messages:read');
      assert.deepEqual((await identity(server, flow.tokens.access_token)).body.scopes, ['messages:read']);
      assertError(await server.request('GET', '/v1/api-keys', { token: flow.tokens.access_token }), 403, 'credential_kind_not_allowed');
      const only = await authorizationRequest(server, { scope: 'keys:write' });
      const back = new URL((await get(server, only.url)).location!);
      assert.equal(back.searchParams.get('error'), 'invalid_scope');
    });

    it('a forged consent form cannot add keys:write', async () => {
      const request = await authorizationRequest(server, { scope: 'messages:read' });
      const flow = await consentInBrowser(server, request.url, { ...owner, scopes: ['messages:read', 'keys:write', 'messages:write'] });
      const callback = oauth.validateAuthResponse(request.as, request.client, flow.callback, request.state);
      const tokens = await oauth.processAuthorizationCodeResponse(
        request.as,
        request.client,
        await oauth.authorizationCodeGrantRequest(request.as, request.client, oauth.None(), callback, REDIRECT_URI, request.verifier, clientOptions(server)),
      );
      assert.equal(tokens.scope, 'messages:read');
    });

    it('an unknown scope is invalid_scope', async () => {
      const request = await authorizationRequest(server, { scope: 'messages:read everything' });
      const back = new URL((await get(server, request.url)).location!);
      assert.equal(back.searchParams.get('error'), 'invalid_scope');
    });

    it('a member demoted after consent loses the scopes at once; removed, the token stops', async () => {
      const ownerToken = await dashboardToken(server, owner);
      const admin = await addMember(server, owner.organizationId, 'admin');
      const flow = await authorize(server, admin, { params: { scope: 'messages:read messages:write connections:write' } });
      assert.deepEqual((await identity(server, flow.tokens.access_token)).body.scopes, ['messages:read', 'messages:write', 'connections:write']);
      assert.equal((await server.request('PATCH', `/v1/members/${admin.memberId}`, { token: ownerToken, body: { role: 'viewer' } })).status, 200);
      assert.deepEqual((await identity(server, flow.tokens.access_token)).body.scopes, ['messages:read']);
      assertError(await server.request('POST', '/v1/connections', { token: flow.tokens.access_token, body: { code: 'x' } }), 403, 'scope_missing');
      // A refresh answers what the token can do now.
      const rotated = await oauth.processRefreshTokenResponse(flow.as, flow.client, await refresh(server, flow, flow.tokens.refresh_token!));
      assert.equal(rotated.scope, 'messages:read');
      assert.equal((await server.request('DELETE', `/v1/members/${admin.memberId}`, { token: ownerToken })).status, 200);
      assertError(await identity(server, rotated.access_token), 401, 'credential_revoked');
      const refused = await oauthErrorOf(refresh(server, flow, rotated.refresh_token!).then((r) => oauth.processRefreshTokenResponse(flow.as, flow.client, r)));
      assert.equal(refused.error, 'invalid_grant');
    });

    it('a token issued for /mcp is refused at /v1', async () => {
      const flow = await authorize(server, owner, { params: { resource: `${server.config.publicBaseUrl}/mcp` } });
      const refused = assertError(await identity(server, flow.tokens.access_token), 401, 'credential_invalid');
      assert.match(refused.message, /\/mcp/);
    });

    it('a resource that is neither /v1 nor /mcp is invalid_target', async () => {
      const request = await authorizationRequest(server, { resource: 'https://elsewhere.example/api' });
      const back = new URL((await get(server, request.url)).location!);
      assert.equal(back.searchParams.get('error'), 'invalid_target');
    });

    it('the token request must name the resource of the code, if any', async () => {
      const request = await authorizationRequest(server);
      const pages = await consentInBrowser(server, request.url, owner);
      const callback = oauth.validateAuthResponse(request.as, request.client, pages.callback, request.state);
      const error = await oauthErrorOf(
        oauth
          .authorizationCodeGrantRequest(request.as, request.client, oauth.None(), callback, REDIRECT_URI, request.verifier, {
            ...clientOptions(server),
            additionalParameters: { resource: `${server.config.publicBaseUrl}/mcp` },
          })
          .then((response) => oauth.processAuthorizationCodeResponse(request.as, request.client, response)),
      );
      assert.equal(error.error, 'invalid_target');
    });

    it('the 41st call in a second with one token is rate_limited', async () => {
      const flow = await authorize(server, owner);
      for (let call = 1; call <= 40; call++) assert.equal((await identity(server, flow.tokens.access_token)).status, 200, `call ${call}`);
      const refused = assertError(await identity(server, flow.tokens.access_token), 429, 'rate_limited');
      assert.match(refused.message, /OAuth token/);
    });

    it('a consent page older than 10 minutes, or altered, is refused', async () => {
      const request = await authorizationRequest(server);
      const opened = await get(server, request.url);
      const sealed = /name="request" value="([^"]+)"/.exec(opened.text)![1]!;
      server.clock.advance(11 * MINUTE);
      const late = await signIn(server, { request: sealed, email: owner.email, password: owner.password });
      assert.equal(late.status, 400);
      assert.match(late.text, /expired or was altered/);
      const tampered = await signIn(server, { request: 'v1.AAAA.BBBB.CCCC', email: owner.email, password: owner.password });
      assert.equal(tampered.status, 400);
      assert.match(tampered.text, /expired or was altered/);
    });

    it('the token endpoint answers RFC 6749 errors: a JSON body is invalid_request, an unknown grant type unsupported_grant_type, an unknown client invalid_client', async () => {
      const json = await server.request('POST', '/oauth/token', { body: { grant_type: 'authorization_code' } });
      assert.deepEqual([json.status, json.body.error], [400, 'invalid_request']);
      const form = (fields: Record<string, string>) =>
        server.request('POST', '/oauth/token', {
          rawBody: new URLSearchParams(fields).toString(),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        });
      assert.equal((await form({ grant_type: 'password', client_id: 'oac_x' })).body.error, 'unsupported_grant_type');
      const unknown = await form({ grant_type: 'refresh_token', client_id: 'oac_01M8B8YH89X47AR18H4XZ86KJY', refresh_token: 'ort_x' });
      assert.deepEqual([unknown.status, unknown.body.error], [401, 'invalid_client']);
      const twice = await server.request('POST', '/oauth/token', {
        rawBody: 'grant_type=refresh_token&grant_type=refresh_token&client_id=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.deepEqual([twice.status, twice.body.error], [400, 'invalid_request']);
    });
  });
});

describe('OAuth: client ID metadata documents', () => {
  let server: TestServer;
  let owner: SignedUp;
  let documents: Server;
  let documentBase: string;
  const served = new Map<string, { status?: number; body: string }>();
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
    documents = createServer((request, response) => {
      const entry = served.get(request.url ?? '');
      response.writeHead(entry?.status ?? (entry ? 200 : 404), { 'content-type': 'application/json' }).end(entry?.body ?? '{}');
    });
    await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
    suite.after(() => new Promise((resolve) => documents.close(resolve)));
    const address = documents.address();
    documentBase = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });

  function publish(path: string, document: Record<string, unknown> | string, status?: number): string {
    const url = `${documentBase}${path}`;
    const body = typeof document === 'string' ? document : JSON.stringify({ client_id: url, ...document });
    served.set(path, { body, ...(status ? { status } : {}) });
    return url;
  }

  it('a client identified by its document URL is authorized without registering, shown as identified by it', async () => {
    const clientId = publish('/apps/crm.json', { client_name: 'Document CRM', redirect_uris: [REDIRECT_URI] });
    const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: 'none' };
    const request = await authorizationRequest(server, {}, client);
    const pages = await consentInBrowser(server, request.url, owner);
    assert.match(pages.signInPage, /Document CRM/);
    assert.match(pages.signInPage, /Identified by its metadata document/);
    const callback = oauth.validateAuthResponse(request.as, client, pages.callback, request.state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      request.as,
      client,
      await oauth.authorizationCodeGrantRequest(request.as, client, oauth.None(), callback, REDIRECT_URI, request.verifier, clientOptions(server)),
    );
    assert.equal((await identity(server, tokens.access_token)).status, 200);
    const app = (await server.request('GET', '/v1/authorized-apps', { token: owner.token })).body.data.find(
      (item: { client: { id: string } }) => item.client.id === clientId,
    );
    assert.deepEqual(app.client, { id: clientId, name: 'Document CRM', verified: true });
  });

  it('a document that names another client_id, has no redirect URIs, is too large or is not there is an error page', async () => {
    const cases: [string, string, RegExp][] = [
      ['/apps/other.json', JSON.stringify({ client_id: 'https://someone.else/app.json', redirect_uris: [REDIRECT_URI] }), /another client_id/],
      ['/apps/empty.json', JSON.stringify({ client_id: `${documentBase}/apps/empty.json`, redirect_uris: [] }), /no redirect_uris/],
      [
        '/apps/large.json',
        JSON.stringify({ client_id: `${documentBase}/apps/large.json`, redirect_uris: [REDIRECT_URI], padding: 'x'.repeat(6000) }),
        /larger than 5120/,
      ],
      ['/apps/bad-uri.json', JSON.stringify({ client_id: `${documentBase}/apps/bad-uri.json`, redirect_uris: ['http://crm.example/cb'] }), /loopback/],
    ];
    for (const [path, body, message] of cases) {
      publish(path, body);
      const request = await authorizationRequest(server, {}, { client_id: `${documentBase}${path}` });
      const page = await get(server, request.url);
      assert.equal(page.status, 400, path);
      assert.equal(page.location, null, path);
      assert.match(page.text, message, path);
    }
    const missing = await get(server, (await authorizationRequest(server, {}, { client_id: `${documentBase}/apps/missing.json` })).url);
    assert.match(missing.text, /answered 404/);
  });

  it('the redirect URI must be one of the document’s, exactly', async () => {
    const clientId = publish('/apps/exact.json', { redirect_uris: [REDIRECT_URI] });
    const page = await get(server, (await authorizationRequest(server, { redirect_uri: 'https://evil.example/cb' }, { client_id: clientId })).url);
    assert.equal(page.status, 400);
    assert.equal(page.location, null);
  });
});

describe('OAuth: client ID metadata documents on private addresses', () => {
  let server: TestServer;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite, { env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } });
  });

  it('a client_id URL resolving to a private address is refused with an error page, never fetched', async () => {
    for (const clientId of [
      'https://localhost/app.json',
      'https://127.0.0.1/app.json',
      'https://169.254.169.254/latest/meta-data',
      'https://10.0.0.8/client',
    ]) {
      const request = await authorizationRequest(server, {}, { client_id: clientId });
      const page = await get(server, request.url);
      assert.equal(page.status, 400, clientId);
      assert.equal(page.location, null, clientId);
      assert.match(page.text, /not a public internet address/, clientId);
    }
  });

  it('an http client_id is refused where private networks are not allowed', async () => {
    const page = await get(server, (await authorizationRequest(server, {}, { client_id: 'http://crm.example/app.json' })).url);
    assert.equal(page.status, 400);
  });
});

describe('OAuth: the MCP SDK’s own client through discovery, registration, PKCE, consent, token and refresh', () => {
  let server: TestServer;
  let owner: SignedUp;
  const suite = suiteScope();
  before(async () => {
    server = await startServer(suite);
    owner = await signUp(server);
  });

  it('auth() finds the server from /mcp, registers, is sent to consent, exchanges the code for an /mcp token, and refreshes it', async () => {
    const provider = new TestMcpClient(REDIRECT_URI);
    const serverUrl = `${server.config.publicBaseUrl}/mcp`;
    const fetchFn = publicFetch(server);
    assert.equal(await auth(provider, { serverUrl, fetchFn }), 'REDIRECT');
    const authorizationUrl = provider.authorizationUrl!;
    assert.equal(authorizationUrl.searchParams.get('resource'), serverUrl);
    assert.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
    const pages = await consentInBrowser(server, authorizationUrl, owner);
    assert.match(pages.signInPage, /Test MCP client/);
    const code = pages.callback.searchParams.get('code')!;
    assert.equal(pages.callback.searchParams.get('iss'), server.config.publicBaseUrl);
    assert.equal(await auth(provider, { serverUrl, authorizationCode: code, fetchFn }), 'AUTHORIZED');
    const first = provider.tokens()!;
    assert.match(first.access_token, /^oat_/);
    // An /mcp token: the tool server's to accept, refused by /v1.
    assertError(await identity(server, first.access_token), 401, 'credential_invalid');
    const row = await server.app.store.db
      .selectFrom('oauth_tokens')
      .select(['resource', 'member_id', 'client_id'])
      .where('revoked_at', 'is', null)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      { ...row },
      { resource: serverUrl, member_id: owner.memberId, client_id: (provider.clientInformation() as { client_id: string }).client_id },
    );

    assert.equal(await auth(provider, { serverUrl, fetchFn }), 'AUTHORIZED');
    const second = provider.tokens()!;
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.notEqual(second.access_token, first.access_token);
  });
});

describe('OAuth: limits and retention', () => {
  it('registration is limited per source address like every unauthenticated request', async (t) => {
    const server = await startServer(t, { env: { RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '2' } });
    const post = () => server.request('POST', '/oauth/register', { body: { redirect_uris: [REDIRECT_URI] } });
    assert.equal((await post()).status, 201);
    assert.equal((await post()).status, 201);
    assertError(await post(), 429, 'rate_limited');
    // Discovery is not limited: clients fetch it on every connection.
    assert.equal((await server.request('GET', '/.well-known/oauth-authorization-server')).status, 200);
  });

  it('the hourly purge deletes expired codes and refresh tokens, clients unused for 30 days and grants dead for 30 days', async (t) => {
    const server = await startServer(t);
    const owner = await signUp(server);
    const flow = await authorize(server, owner);
    await register(server, flow.as);
    const count = async (table: 'oauth_clients' | 'oauth_grants' | 'oauth_refresh_tokens' | 'oauth_authorization_codes') =>
      Number(
        (
          await server.app.store.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    assert.deepEqual(
      [await count('oauth_clients'), await count('oauth_grants'), await count('oauth_refresh_tokens'), await count('oauth_authorization_codes')],
      [2, 1, 1, 1],
    );
    await server.app.services.oauth.purge(1000);
    assert.deepEqual(
      [await count('oauth_clients'), await count('oauth_grants'), await count('oauth_refresh_tokens'), await count('oauth_authorization_codes')],
      [2, 1, 1, 1],
    );
    server.clock.advance(31 * DAY);
    await server.app.services.oauth.purge(1000);
    assert.deepEqual(
      [await count('oauth_clients'), await count('oauth_grants'), await count('oauth_refresh_tokens'), await count('oauth_authorization_codes')],
      [0, 0, 0, 0],
    );
  });
});
