import type { FastifyReply } from 'fastify';
import type { Access } from '../../http/access.ts';
import type { HttpServer } from '../../http/server.ts';
import { DashboardTokenSchema, LoginBody, LogoutResponse, SignupBody } from './auth.schemas.ts';
import type { AuthService, IssuedSession } from './auth.service.ts';
import { REFRESH_COOKIE, refreshCookieOf, setRefreshCookie } from './session-cookie.ts';

const access: Access = { public: true, reason: 'Creates or renews a credential; limited per source address.' };

export function registerAuthRoutes(app: HttpServer, service: AuthService, options: { secureCookies: boolean }): void {
  const setCookie = (reply: FastifyReply, session: IssuedSession) => setRefreshCookie(reply, session, { secure: options.secureCookies });

  app.post('/auth/signup', {
    config: { access },
    schema: {
      tags: ['Auth'],
      summary: 'Create an organization and its owner',
      body: SignupBody,
      response: { 201: DashboardTokenSchema },
    },
    handler: async (request, reply) => {
      const session = await service.signup(request.body, request.id);
      setCookie(reply, session);
      return reply.code(201).send(session.body);
    },
  });

  app.post('/auth/login', {
    config: { access },
    schema: { tags: ['Auth'], summary: 'Log in and get a dashboard token', body: LoginBody, response: { 200: DashboardTokenSchema } },
    handler: async (request, reply) => {
      const session = await service.login(request.body, request.id);
      setCookie(reply, session);
      return session.body;
    },
  });

  app.post('/auth/refresh', {
    config: { access },
    schema: { tags: ['Auth'], summary: 'Renew the dashboard token with the refresh cookie', response: { 200: DashboardTokenSchema } },
    handler: async (request, reply) => {
      const session = await service.refresh(refreshCookieOf(request));
      setCookie(reply, session);
      return session.body;
    },
  });

  app.post('/auth/logout', {
    config: { access },
    schema: { tags: ['Auth'], summary: 'End the dashboard session', response: { 200: LogoutResponse } },
    handler: async (request, reply) => {
      const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
      const sessionId = await service.logout({ refreshToken: refreshCookieOf(request), accessToken: bearer }, request.id);
      reply.clearCookie(REFRESH_COOKIE, { path: '/auth' });
      return { object: 'session' as const, revoked: sessionId !== null, session_id: sessionId };
    },
  });
}
