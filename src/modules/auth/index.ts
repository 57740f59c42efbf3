/**
 * Dashboard sign-up and sessions (`/auth/*`): passwords hashed with scrypt, dashboard tokens that live
 * 15 minutes, and a refresh token in an httpOnly cookie that rotates on every use. Also resolves a
 * dashboard token into its caller for the credentials module.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { HttpServer } from '../../http/server.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { MembersService } from '../members/index.ts';
import type { OrganizationsService } from '../organizations/index.ts';
import { registerAuthRoutes } from './auth.routes.ts';
import { createAuthService } from './auth.service.ts';
import { createAuthStore } from './auth.store.ts';

export function createAuthModule(deps: {
  db: Db;
  clock: Clock;
  organizations: OrganizationsService;
  members: MembersService;
  audit: AuditEventsService;
  secureCookies: boolean;
}) {
  const service = createAuthService({ ...deps, store: createAuthStore() });
  return { service, registerRoutes: (app: HttpServer) => registerAuthRoutes(app, service, { secureCookies: deps.secureCookies }) };
}

export type { AuthService } from './auth.service.ts';
export { DASHBOARD_TOKEN_PREFIX } from './auth.service.ts';
