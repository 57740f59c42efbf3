/**
 * Which redirect URIs a client may have, and when a presented one matches a registered one. Shared
 * by registration and client ID metadata documents, so both refuse the same URIs.
 */

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
// RFC 8252 §7.3: a native app listens on whatever port it gets, so an IP loopback redirect URI
// matches on any port (not `localhost`, which a resolver could send elsewhere).
const ANY_PORT_HOSTS = new Set(['127.0.0.1', '[::1]']);
const MAX_REDIRECT_URI_LENGTH = 2000;

/** Why a redirect URI is refused, or undefined when it is acceptable. */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_REDIRECT_URI_LENGTH) return `is longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not an absolute URL';
  }
  if (uri.includes('#')) return 'must not have a fragment';
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return 'must be https, or http on a loopback address (127.0.0.1, [::1] or localhost)';
}

/** Exact string match, except the port of an IP loopback URI (RFC 8252 §7.3). */
export function redirectUriMatches(registered: string, presented: string): boolean {
  if (registered === presented) return true;
  let left: URL;
  let right: URL;
  try {
    left = new URL(registered);
    right = new URL(presented);
  } catch {
    return false;
  }
  if (left.protocol !== 'http:' || !ANY_PORT_HOSTS.has(left.hostname)) return false;
  if (presented.includes('#')) return false;
  left.port = '';
  right.port = '';
  return right.protocol === 'http:' && left.href === right.href;
}
