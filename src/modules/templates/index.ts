/**
 * Templates: the message templates of a connection's account, as the provider reviews them. Owns
 * reading them from the provider (sync) and recording their review (`template.status_changed`).
 * The /v1/templates endpoints (list, get, create, delete) arrive with the messaging core.
 */
import type { Db } from '../../db/connect.ts';
import type { EventEmitter } from '../../events/emit.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Provider } from '../../provider/provider.ts';
import { createTemplatesService } from './templates.service.ts';
import { createTemplatesStore } from './templates.store.ts';

export function createTemplatesModule(deps: { db: Db; clock: Clock; events: EventEmitter; provider: Provider }) {
  return { service: createTemplatesService({ ...deps, store: createTemplatesStore() }) };
}

export type { TemplateOwner, TemplatesService } from './templates.service.ts';
export type { Template } from './templates.schemas.ts';
