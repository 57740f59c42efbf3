/**
 * OAuth access tokens: stored hashed, scoped to one organization and the consent given, expiring.
 * Issuing them through an OAuth flow comes later; authenticating them works now.
 */
import type { Db } from '../../db/connect.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Module } from '../module.ts';
import { createOauthTokensService, type OauthTokensService } from './oauth-tokens.service.ts';
import { createOauthTokensStore } from './oauth-tokens.store.ts';

export function createOauthTokensModule(deps: { db: Db; clock: Clock }): Module<OauthTokensService> {
  return { name: 'oauth-tokens', service: createOauthTokensService({ ...deps, store: createOauthTokensStore() }) };
}

export type { OauthTokensService } from './oauth-tokens.service.ts';
export { OAUTH_TOKEN_PREFIX } from './oauth-tokens.service.ts';
