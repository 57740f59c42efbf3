/**
 * Dashboard sign-up and sessions (`/auth/*`): passwords hashed with scrypt, dashboard tokens that live
 * 15 minutes, and a refresh token in an httpOnly cookie that rotates on every use. Also resolves a
 * dashboard token into its caller for the credentials module.
 */
import type { MembersService } from '../members/index.ts';
import type { Module } from '../module.ts';
import { registerAuthRoutes } from './auth.routes.ts';
import { createAuthService, type AuthService, type AuthServiceDeps } from './auth.service.ts';
import { createAuthStore } from './auth.store.ts';

export function createAuthModule(
  deps: Omit<AuthServiceDeps, 'store'> & { secureCookies: boolean; members: AuthServiceDeps['members'] & Pick<MembersService, 'onRemoved'> },
): Module<AuthService> {
  const service = createAuthService({ ...deps, store: createAuthStore() });
  deps.members.onRemoved((trx, member) => service.forgetSessionsOf(trx, member));
  return { name: 'auth', service, routes: (server) => registerAuthRoutes(server, service, { secureCookies: deps.secureCookies }) };
}

export type { AuthService } from './auth.service.ts';
export { DASHBOARD_TOKEN_PREFIX, principalFor } from './auth.service.ts';
export type { IssuedSession } from './auth.service.ts';
export { REFRESH_COOKIE, setRefreshCookie } from './session-cookie.ts';
