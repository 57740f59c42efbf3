import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IssuedSession } from './auth.service.ts';

/** The cookie that carries the refresh token. */
export const REFRESH_COOKIE = 'refresh_token';

/**
 * The refresh token a request carries. Cookies are parsed here, by the two routes that read one,
 * not for every request (`hook: false` in app.ts): an API call never has a cookie to read, and
 * parsing the header was a hook on each of them.
 */
export function refreshCookieOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  return header === undefined ? undefined : request.server.parseCookie(header)[REFRESH_COOKIE];
}

/**
 * Puts a new session's refresh token where only /auth/refresh reads it: an httpOnly cookie scoped to
 * /auth, so page scripts never see it. Every route that answers a session (sign-up, log-in, refresh,
 * an accepted invite) sets it the same way.
 */
export function setRefreshCookie(reply: FastifyReply, session: IssuedSession, options: { secure: boolean }): FastifyReply {
  return reply.setCookie(REFRESH_COOKIE, session.refreshToken, {
    httpOnly: true,
    secure: options.secure,
    sameSite: 'strict',
    path: '/auth',
    expires: session.refreshExpiresAt,
  });
}
