/**
 * Invites: an owner or admin invites a person by email to join the organization with a role below
 * their own. The invite's token is mailed as a link into the dashboard and stored only as its
 * SHA-256; accepting it makes the person a member (creating their account, or proven by their own
 * dashboard token when they have one) and opens their dashboard session. Also owns the daily cap
 * on invite mails.
 */
import type { Module } from '../module.ts';
import { registerInvitesRoutes } from './invites.routes.ts';
import { createInvitesService, type InvitesService, type InvitesServiceDeps } from './invites.service.ts';
import { createInvitesStore } from './invites.store.ts';

export function createInvitesModule(deps: Omit<InvitesServiceDeps, 'store'> & { secureCookies: boolean }): Module<InvitesService> {
  const service = createInvitesService({ ...deps, store: createInvitesStore() });
  return { name: 'invites', service, routes: (server) => registerInvitesRoutes(server, service, { secureCookies: deps.secureCookies }) };
}

export type { InvitesService } from './invites.service.ts';
