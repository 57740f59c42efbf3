/**
 * The outside of an OAuth flow for tests: a fetch that reaches the test server at its public base
 * URL (as a reverse proxy would: issuer and endpoints name PUBLIC_BASE_URL, the server listens on a
 * loopback port), and a person's browser that signs in on the consent page and submits it over HTTP.
 */
import assert from 'node:assert/strict';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { TestServer } from './harness.ts';

/** A fetch that sends what is addressed to PUBLIC_BASE_URL to the listening test server instead. */
export function publicFetch(server: TestServer): typeof fetch {
  const base = server.config.publicBaseUrl;
  return (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const target = url.startsWith(base) ? server.url + url.slice(base.length) : url;
    return input instanceof Request ? fetch(new Request(target, input), init) : fetch(target, init);
  };
}

/** The value of a hidden field, as the page escaped it. */
function hidden(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  assert.ok(match?.[1], `the page has a ${name} field:\n${html}`);
  return unescape(match[1]);
}

function unescape(text: string): string {
  return text.replace(/&#(\d+);/g, (_all, code: string) => String.fromCharCode(Number(code)));
}

function form(fields: [string, string][]): { method: 'POST'; headers: Record<string, string>; body: string; redirect: 'manual' } {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  };
}

export interface ConsentChoice {
  email: string;
  password: string;
  /** Default: the first organization offered. */
  organizationId?: string;
  /** Default: every scope the page offers (all ticked). */
  scopes?: string[];
  decision?: 'approve' | 'deny';
}

export interface ConsentPages {
  signInPage: string;
  consentPage: string;
  /** The Location the consent form answered with: the app's redirect URI with `code` (or `error`), `state` and `iss`. */
  callback: URL;
}

/** Opens the authorization URL, signs in, and submits the consent form as a browser would. */
export async function consentInBrowser(server: TestServer, authorizationUrl: URL | string, choice: ConsentChoice): Promise<ConsentPages> {
  const http = publicFetch(server);
  const opened = await http(String(authorizationUrl), { redirect: 'manual' });
  const signInPage = await opened.text();
  assert.equal(opened.status, 200, signInPage);
  const signedIn = await http(
    `${server.url}/oauth/authorize/sign-in`,
    form([
      ['request', hidden(signInPage, 'request')],
      ['email', choice.email],
      ['password', choice.password],
    ]),
  );
  const consentPage = await signedIn.text();
  assert.equal(signedIn.status, 200, consentPage);
  const offered = [...consentPage.matchAll(/name="scope" value="([^"]+)"/g)].map((match) => unescape(match[1]!));
  const organizationId = choice.organizationId ?? hidden(consentPage, 'organization_id');
  const decided = await http(
    `${server.url}/oauth/authorize/consent`,
    form([
      ['consent', hidden(consentPage, 'consent')],
      ['organization_id', organizationId],
      ...(choice.scopes ?? offered).map((scope): [string, string] => ['scope', scope]),
      ['decision', choice.decision ?? 'approve'],
    ]),
  );
  assert.equal(decided.status, 303, await decided.text());
  const location = decided.headers.get('location');
  assert.ok(location, 'the consent form redirects back to the app');
  return { signInPage, consentPage, callback: new URL(location) };
}

/** An MCP client's storage, as the SDK asks a host application to keep it; the browser step is the test's. */
export class TestMcpClient implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  readonly #redirectUri: string;
  constructor(redirectUri: string) {
    this.#redirectUri = redirectUri;
  }
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';
  get redirectUrl() {
    return this.#redirectUri;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      redirect_uris: [this.#redirectUri],
      client_name: 'Test MCP client',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }
  clientInformation() {
    return this.#client;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.#client = information;
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens: OAuthTokens) {
    this.#tokens = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
}
