import type { FastifyReply } from 'fastify';
import type { IssuedSession } from './auth.service.ts';

/** The cookie that carries the refresh token. */
export const REFRESH_COOKIE = 'refresh_token';

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
