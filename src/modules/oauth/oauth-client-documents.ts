/**
 * Client ID metadata documents: a client whose `client_id` is an https URL publishes its metadata
 * there (draft-ietf-oauth-client-id-metadata-document, the MCP authorization spec). The document is
 * fetched through the SSRF-guarded client (a URL resolving to a private address is refused), small,
 * without following redirects, and remembered for a few minutes.
 */
import type { Clock } from '../../lib/clock.ts';
import { MINUTE, SECOND } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import type { GuardedHttp } from '../../lib/guarded-http.ts';
import { redirectUriProblem } from './oauth-redirect-uris.ts';

export const CLIENT_DOCUMENT_MAX_BYTES = 5 * 1024;
export const CLIENT_DOCUMENT_CACHE_MS = 5 * MINUTE;
const CLIENT_DOCUMENT_TIMEOUT_MS = 5 * SECOND;
const CACHE_MAX = 1_000;

export interface ClientDocument {
  clientId: string;
  name: string;
  redirectUris: string[];
}

/** A document that cannot be used: the reason is shown on the error page, never redirected. */
export class ClientDocumentError extends Error {}

export interface ClientDocuments {
  /** Whether `clientId` is a URL this server would fetch as a metadata document (https; http too where private networks are allowed). */
  isDocumentUrl(clientId: string): boolean;
  resolve(url: string): Promise<ClientDocument>;
}

export function createClientDocuments(deps: { http: Pick<GuardedHttp, 'checkUrl' | 'request'>; clock: Clock; allowPrivateNetworks: boolean }): ClientDocuments {
  const { http, clock, allowPrivateNetworks } = deps;
  const cache = new Map<string, { document: ClientDocument; until: number }>();

  function urlProblem(raw: string): string | undefined {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return 'is not a URL';
    }
    if (url.protocol !== 'https:' && !(allowPrivateNetworks && url.protocol === 'http:')) return 'must be an https URL';
    if (url.pathname === '/' || url.pathname === '') return 'must have a path';
    if (raw.includes('#')) return 'must not have a fragment';
    if (url.username !== '' || url.password !== '') return 'must not carry credentials';
    if (/\/\.\.?(\/|$)/.test(url.pathname)) return 'must not have . or .. path segments';
    return undefined;
  }

  async function fetchDocument(url: string): Promise<ClientDocument> {
    const problem = urlProblem(url);
    if (problem) throw new ClientDocumentError(`The client_id ${problem}.`);
    try {
      await http.checkUrl(url, '/client_id');
    } catch (error) {
      throw new ClientDocumentError(error instanceof AppError ? `The client_id cannot be fetched: ${error.message}` : 'The client_id cannot be fetched.');
    }
    const result = await http.request({
      method: 'GET',
      url,
      headers: { accept: 'application/json' },
      timeoutMs: CLIENT_DOCUMENT_TIMEOUT_MS,
      read: { keepBytes: CLIENT_DOCUMENT_MAX_BYTES, maxBytes: CLIENT_DOCUMENT_MAX_BYTES + 1, budgetMs: CLIENT_DOCUMENT_TIMEOUT_MS },
    });
    if (result.kind === 'error') throw new ClientDocumentError(`The client's metadata document could not be fetched (${result.error}).`);
    if (result.status !== 200) throw new ClientDocumentError(`The client's metadata document answered ${result.status}, not 200 (redirects are not followed).`);
    if (!result.complete || result.bytesRead > CLIENT_DOCUMENT_MAX_BYTES) {
      throw new ClientDocumentError(`The client's metadata document is larger than ${CLIENT_DOCUMENT_MAX_BYTES} bytes.`);
    }
    let body: unknown;
    try {
      body = JSON.parse(result.body.toString('utf8'));
    } catch {
      throw new ClientDocumentError("The client's metadata document is not JSON.");
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ClientDocumentError("The client's metadata document is not a JSON object.");
    const fields = body as Record<string, unknown>;
    if (fields.client_id !== url) throw new ClientDocumentError("The client's metadata document names another client_id than its own URL.");
    const redirectUris = fields.redirect_uris;
    if (!Array.isArray(redirectUris) || redirectUris.length === 0 || !redirectUris.every((uri): uri is string => typeof uri === 'string')) {
      throw new ClientDocumentError("The client's metadata document has no redirect_uris.");
    }
    const bad = redirectUris.find((uri) => redirectUriProblem(uri) !== undefined);
    if (bad !== undefined) throw new ClientDocumentError(`The client's redirect URI ${bad} ${redirectUriProblem(bad)}.`);
    const method = fields.token_endpoint_auth_method;
    if (method !== undefined && method !== 'none') {
      throw new ClientDocumentError(
        `The client asks for token_endpoint_auth_method ${JSON.stringify(method)}; this server takes public clients only (none, with PKCE).`,
      );
    }
    const name = typeof fields.client_name === 'string' && fields.client_name.trim() !== '' ? fields.client_name.trim().slice(0, 100) : new URL(url).host;
    return { clientId: url, name, redirectUris };
  }

  return {
    isDocumentUrl(clientId) {
      return clientId.startsWith('https://') || (allowPrivateNetworks && clientId.startsWith('http://'));
    },
    async resolve(url) {
      const now = clock.now().getTime();
      const cached = cache.get(url);
      if (cached && cached.until > now) return cached.document;
      // Failures are not remembered: a client fixing its document is seen on the next attempt.
      const document = await fetchDocument(url);
      if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
      cache.set(url, { document, until: now + CLIENT_DOCUMENT_CACHE_MS });
      return document;
    },
  };
}
