import type { Db, Trx } from '../../db/connect.ts';
import type { OrganizationsTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
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

export function createOrganizationsService(deps: { db: Db; store: OrganizationsStore; clock: Clock }) {
  const { db, store, clock } = deps;
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

    async get(id: string): Promise<Organization> {
      const row = await store.find(db, id);
      if (!row) throw notFound('organization');
      return toOrganization(row);
    },
  };
}

export type OrganizationsService = ReturnType<typeof createOrganizationsService>;
