import type { Db } from '../../db/connect.ts';
import { toBoolean } from '../../db/dialect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ConnectionsTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { METADATA_MAX_KEYS } from './connections.schemas.ts';
import { newId } from '../../lib/ids.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import type { Connection, ConnectionStatus, UpdateConnectionInput } from './connections.schemas.ts';
import type { ConnectionsStore } from './connections.store.ts';

function toConnection(row: ConnectionsTable): Connection {
  return {
    id: row.id,
    object: 'connection',
    name: row.name,
    status: row.status as ConnectionStatus,
    test: toBoolean(row.test),
    coexistence: toBoolean(row.coexistence),
    phone_number_id: row.phone_number_id,
    waba_id: row.waba_id,
    display_phone_number: row.display_phone_number,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * The mode rule of the spec: a test key reaches only test connections; we hold live keys to the
 * mirror rule so that test traffic can never be counted as live, nor live traffic hidden as test.
 */
export function assertModeAllows(principal: Principal, connection: { test: boolean }, param?: string): void {
  if (principal.mode === 'test' && !connection.test) {
    throw new AppError('test_key_on_live_connection', 'A test key cannot be used against a live connection.', { param: param ?? null });
  }
  if (principal.mode === 'live' && connection.test) {
    throw new AppError('live_key_on_test_connection', 'A live key cannot be used against a test connection.', { param: param ?? null });
  }
}

export interface NewConnectionRecord {
  organizationId: string;
  name?: string | null;
  status?: ConnectionStatus;
  test: boolean;
  coexistence?: boolean;
  phoneNumberId?: string | null;
  wabaId?: string | null;
  displayPhoneNumber?: string | null;
}

export function createConnectionsService(deps: { db: Db; store: ConnectionsStore; clock: Clock; audit: AuditEventsService }) {
  const { db, store, clock, audit } = deps;

  /** Resolves a connection the caller may address: tenant, connection key and mode rules in one place. */
  async function getRow(executor: Db, principal: Principal, id: string, param?: string): Promise<ConnectionsTable> {
    if (principal.connectionId && principal.connectionId !== id) throw notFound('connection');
    const row = await store.find(executor, principal.organizationId, id);
    if (!row) throw notFound('connection');
    assertModeAllows(principal, { test: toBoolean(row.test) }, param);
    return row;
  }

  return {
    /** Writes a connection record; the connect flow with the provider builds on this. */
    async createRecord(trx: Db, input: NewConnectionRecord): Promise<Connection> {
      const now = clock.now();
      const row: ConnectionsTable = {
        id: newId('connection', now.getTime()),
        organization_id: input.organizationId,
        name: input.name ?? null,
        status: input.status ?? 'connected',
        test: input.test ? 1 : 0,
        coexistence: input.coexistence ? 1 : 0,
        phone_number_id: input.phoneNumberId ?? null,
        waba_id: input.wabaId ?? null,
        display_phone_number: input.displayPhoneNumber ?? null,
        metadata: '{}',
        created_at: now.toISOString(),
        updated_at: now.toISOString(),
      };
      await store.insert(trx, row);
      return toConnection(row);
    },

    async get(principal: Principal, id: string): Promise<Connection> {
      return toConnection(await getRow(db, principal, id));
    },

    /** For other modules that take a `connection_id` in a body: `param` names the field in errors. */
    async getForReference(executor: Db, principal: Principal, id: string, param: string): Promise<Connection> {
      try {
        return toConnection(await getRow(executor, principal, id, param));
      } catch (error) {
        if (error instanceof AppError && error.code === 'resource_not_found') {
          throw new AppError('resource_not_found', `No such connection: ${id}.`, { param });
        }
        throw error;
      }
    },

    /** The connections among `ids` the caller may see, by id: one query for a whole page's worth. */
    async findMany(principal: Principal, ids: readonly string[]): Promise<Map<string, Connection>> {
      const rows = await store.findMany(db, principal.organizationId, ids);
      const visible = rows.filter((row) => !principal.connectionId || row.id === principal.connectionId);
      return new Map(visible.map((row) => [row.id, toConnection(row)]));
    },

    async list(principal: Principal, filters: { status?: ConnectionStatus | undefined }, page: PageRequest): Promise<Page<Connection>> {
      const scope = {
        organizationId: principal.organizationId,
        connectionId: principal.connectionId,
        test: principal.mode === null ? undefined : principal.mode === 'test',
      };
      return mapPage(await store.list(db, scope, filters, page), toConnection);
    },

    async update(actor: Actor, id: string, input: UpdateConnectionInput): Promise<Connection> {
      return db.transaction().execute(async (trx) => {
        const row = await getRow(trx, actor.principal, id);
        const before = toConnection(row);
        const metadata = { ...before.metadata };
        for (const [key, value] of Object.entries(input.metadata ?? {})) {
          if (value === null) delete metadata[key];
          else metadata[key] = value;
        }
        if (Object.keys(metadata).length > METADATA_MAX_KEYS) {
          throw invalidParam('/metadata', `would hold more than ${METADATA_MAX_KEYS} keys once merged; set unused keys to null`, 'too_many');
        }
        const changes = {
          name: input.name === undefined ? row.name : input.name,
          metadata: JSON.stringify(metadata),
          updated_at: clock.now().toISOString(),
        };
        await store.update(trx, actor.principal.organizationId, id, changes);
        const after = toConnection({ ...row, ...changes });
        await audit.record(trx, actor, { action: 'connection.updated', target: { type: 'connection', id }, data: { name: after.name } });
        return after;
      });
    },
  };
}

export type ConnectionsService = ReturnType<typeof createConnectionsService>;
