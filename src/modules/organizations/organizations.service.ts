import type { Db, Trx } from '../../db/connect.ts';
import type { OrganizationsTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { RecentReads } from '../../lib/recent-reads.ts';
import { changedAttributes } from '../../events/envelope.ts';
import { mergeMetadata } from '../../lib/metadata.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { Actor } from '../credentials/principal.ts';
import type { Organization, UpdateOrganizationInput } from './organizations.schemas.ts';
import type { OrganizationsStore } from './organizations.store.ts';

function toOrganization(row: OrganizationsTable): Organization {
  return {
    id: row.id,
    object: 'organization',
    name: row.name,
    settings: { require_approval_for_risky_actions: row.require_approval_for_risky_actions === 1 },
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Every `/v1/identity` (and every login and refresh) reads the caller's organization; it is
 * remembered for a second. A write of an organization in this service must `recent.forget(id)` in
 * its transaction, so that the change shows at once here and within a second in other processes.
 */
export const ORGANIZATION_CACHE_TTL_MS = 1000;
const ORGANIZATION_CACHE_MAX = 10_000;

export function createOrganizationsService(deps: { db: Db; store: OrganizationsStore; clock: Clock; audit: Pick<AuditEventsService, 'record'> }) {
  const { db, store, clock, audit } = deps;
  const recent = new RecentReads<Organization>({ clock, ttlMs: ORGANIZATION_CACHE_TTL_MS, maxEntries: ORGANIZATION_CACHE_MAX });
  const organizationTags = (organization: Organization) => [organization.id];
  return {
    /** Part of sign-up: runs inside the caller's transaction. */
    async create(trx: Trx, input: { name: string }): Promise<Organization> {
      const now = clock.now();
      const row: OrganizationsTable = {
        id: newId('organization', now.getTime()),
        name: input.name,
        metadata: '{}',
        require_approval_for_risky_actions: 0,
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      };
      await store.insert(trx, row);
      return toOrganization(row);
    },

    /** Possibly a second old when another process changed it (see ORGANIZATION_CACHE_TTL_MS). */
    async get(id: string): Promise<Organization> {
      const organization = await recent.read(
        id,
        async () => {
          const row = await store.find(db, id);
          return row ? toOrganization(row) : undefined;
        },
        organizationTags,
      );
      if (!organization) throw notFound('organization');
      return organization;
    },

    /** The caller's organization: its name, settings (each replaced when given) and metadata (merged). */
    async update(actor: Actor, input: UpdateOrganizationInput): Promise<Organization> {
      const id = actor.principal.organizationId;
      return db.transaction().execute(async (trx) => {
        const row = await store.lock(trx, id);
        if (!row) throw notFound('organization');
        const risky = input.settings?.require_approval_for_risky_actions;
        const changes = {
          ...(input.name === undefined ? {} : { name: input.name }),
          ...(risky === undefined ? {} : { require_approval_for_risky_actions: risky ? 1 : 0 }),
          metadata: mergeMetadata(row.metadata, input.metadata),
        };
        const before = toOrganization(row);
        const after = toOrganization({ ...row, ...changes });
        const changed = changedAttributes(before, after);
        if (Object.keys(changed).length === 0) return before;
        const now = clock.now().toISOString();
        await store.update(trx, id, { ...changes, updated_at: now });
        await audit.record(trx, actor, { action: 'organization.updated', target: { type: 'organization', id }, data: { previous: changed } });
        recent.forget(id);
        return { ...after, updated_at: now };
      });
    },
  };
}

export type OrganizationsService = ReturnType<typeof createOrganizationsService>;
