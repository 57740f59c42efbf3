import type { Db, Trx } from '../../db/connect.ts';
import type { OrganizationsTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { RecentReads } from '../../lib/recent-reads.ts';
import type { Organization } from './organizations.schemas.ts';
import type { OrganizationsStore } from './organizations.store.ts';

function toOrganization(row: OrganizationsTable): Organization {
  return {
    id: row.id,
    object: 'organization',
    name: row.name,
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

export function createOrganizationsService(deps: { db: Db; store: OrganizationsStore; clock: Clock }) {
  const { db, store, clock } = deps;
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
  };
}

export type OrganizationsService = ReturnType<typeof createOrganizationsService>;
