import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { AuditEventsTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { StoredJson } from '../../lib/stored-json.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import type { AuditEvent } from './audit-events.schemas.ts';
import type { AuditEventsStore } from './audit-events.store.ts';

export interface AuditEntry {
  action: string;
  target: { type: string; id: string };
  data?: Record<string, unknown>;
}

/** Changes made by the service itself (a worker disabling an endpoint, say) have no credential. */
export interface SystemActor {
  readonly system: true;
  readonly organizationId: string;
}

function actorOf(principal: Principal): { type: AuditEvent['actor']['type']; id: string | null } {
  switch (principal.kind) {
    case 'dashboard_token':
      return { type: 'member', id: principal.memberId };
    case 'oauth_token':
      return { type: 'oauth_token', id: principal.credentialId };
    default:
      return { type: 'api_key', id: principal.credentialId };
  }
}

function toAuditEvent(row: AuditEventsTable): AuditEvent {
  return {
    id: row.id,
    object: 'audit_event',
    action: row.action,
    actor: { type: row.actor_type as AuditEvent['actor']['type'], id: row.actor_id },
    credential:
      row.credential_type && row.credential_id ? { type: row.credential_type as NonNullable<AuditEvent['credential']>['type'], id: row.credential_id } : null,
    target: { type: row.target_type, id: row.target_id },
    request_id: row.request_id,
    oauth_client: row.oauth_client_name === null ? null : { id: row.oauth_client_id, name: row.oauth_client_name },
    data: new StoredJson(row.data),
    created_at: row.created_at,
  };
}

export function createAuditEventsService(deps: { db: Db; store: AuditEventsStore; clock: Clock }) {
  const { db, store, clock } = deps;
  return {
    /** Writes one audit entry inside the caller's transaction, so the change and its record stand or fall together. */
    async record(trx: Trx, by: Actor | SystemActor, entry: AuditEntry): Promise<void> {
      const now = clock.now();
      const principal = 'system' in by ? null : by.principal;
      const actor = principal ? actorOf(principal) : { type: 'system' as const, id: null };
      await store.insert(trx, {
        id: newId('auditEvent', now.getTime()),
        organization_id: principal ? principal.organizationId : (by as SystemActor).organizationId,
        action: entry.action,
        actor_type: actor.type,
        actor_id: actor.id,
        credential_type: principal?.kind ?? null,
        credential_id: principal?.credentialId ?? null,
        target_type: entry.target.type,
        target_id: entry.target.id,
        request_id: 'requestId' in by ? by.requestId : null,
        data: JSON.stringify(entry.data ?? {}),
        created_at: now.toISOString(),
        // Which app a change made with an OAuth token came through, so an owner can tell apps apart.
        oauth_client_id: principal?.oauthClient?.id ?? null,
        oauth_client_name: principal?.oauthClient?.name ?? null,
      });
    },

    async get(organizationId: string, id: string): Promise<AuditEvent> {
      const row = await store.find(db, organizationId, id);
      if (!row) throw notFound('event');
      return toAuditEvent(row);
    },

    async list(organizationId: string, filters: { action?: string | undefined; targetId?: string | undefined }, page: PageRequest): Promise<Page<AuditEvent>> {
      return mapPage(await store.list(db, organizationId, filters, page), toAuditEvent);
    },
  };
}

export type AuditEventsService = ReturnType<typeof createAuditEventsService>;
