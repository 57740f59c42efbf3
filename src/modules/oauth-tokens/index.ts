/**
 * OAuth access tokens: stored hashed, scoped to one organization and the consent given, expiring.
 * The authorization server (modules/oauth) issues them under a grant; a token of a grant is bound
 * by its member's current role on every request. Also resolves a token into its caller.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { MembersService } from '../members/index.ts';
import type { Module } from '../module.ts';
import { createOauthTokensService, type OauthTokensService } from './oauth-tokens.service.ts';
import { createOauthTokensStore } from './oauth-tokens.store.ts';

export function createOauthTokensModule(deps: { db: Db; clock: Clock; members: Pick<MembersService, 'findRole'> }): Module<OauthTokensService> {
  return { name: 'oauth-tokens', service: createOauthTokensService({ ...deps, store: createOauthTokensStore() }) };
}

export type { OauthTokensService, OauthTokenGrant } from './oauth-tokens.service.ts';
export { OAUTH_TOKEN_PREFIX } from './oauth-tokens.service.ts';
