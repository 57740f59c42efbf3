import type { Db, Trx } from '../../db/connect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ApiKeysTable } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import { randomBase62, sha256Hex } from '../../lib/crypto.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { RecentReads } from '../../lib/recent-reads.ts';
import { embedRelations } from '../../lib/relations.ts';
import type { AuditEventsService } from '../audit-events/index.ts';
import type { ConnectionsService } from '../connections/index.ts';
import type { Actor, Principal } from '../credentials/principal.ts';
import {
  CONNECTION_KEY_SCOPES,
  ORGANIZATION_KEY_ALLOWED_SCOPES,
  ORGANIZATION_KEY_DEFAULT_SCOPES,
  type Mode,
  type Scope,
} from '../credentials/scopes.schemas.ts';
import type { ApiKey, ApiKeyKind, ApiKeyWithSecret, CreateApiKeyInput } from './api-keys.schemas.ts';
import type { ApiKeysStore } from './api-keys.store.ts';

const KIND_PREFIX: Record<ApiKeyKind, 'csk' | 'cok'> = { connection: 'csk', organization: 'cok' };
export const API_KEY_PATTERN = /^(csk|cok)_(live|test)_[0-9A-Za-z]{32}$/;

function toApiKey(row: ApiKeysTable): ApiKey {
  return {
    id: row.id,
    object: 'api_key',
    kind: row.kind as ApiKeyKind,
    mode: row.mode as Mode,
    connection_id: row.connection_id,
    name: row.name,
    scopes: JSON.parse(row.scopes) as Scope[],
    redacted_key: row.key_hint,
    status: row.revoked_at ? 'revoked' : 'active',
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
    rotated_to: row.rotated_to_key_id,
  };
}

function mintKey(kind: ApiKeyKind, mode: Mode): { key: string; hash: string; hint: string } {
  const key = `${KIND_PREFIX[kind]}_${mode}_${randomBase62(32)}`;
  return { key, hash: sha256Hex(key), hint: `${KIND_PREFIX[kind]}_${mode}_…${key.slice(-4)}` };
}

function resolveScopes(kind: ApiKeyKind, requested: readonly Scope[] | undefined): Scope[] {
  const allowed = kind === 'connection' ? CONNECTION_KEY_SCOPES : ORGANIZATION_KEY_ALLOWED_SCOPES;
  if (!requested) return [...(kind === 'connection' ? CONNECTION_KEY_SCOPES : ORGANIZATION_KEY_DEFAULT_SCOPES)];
  const index = requested.findIndex((scope) => !allowed.includes(scope));
  if (index >= 0)
    throw invalidParam(`/scopes/${index}`, `is not a scope ${kind === 'organization' ? 'an organization' : 'a connection'} key can hold (${requested[index]})`);
  return [...requested];
}

/**
 * A key is visible to a credential of its own mode only: a test key, even one holding keys:write,
 * can neither see nor revoke live keys. Dashboard tokens have no mode and see both.
 */
function visibleTo(principal: Principal, row: ApiKeysTable | undefined): row is ApiKeysTable {
  return row !== undefined && (principal.mode === null || principal.mode === row.mode);
}

/**
 * Authenticated keys are remembered for a second: a busy integration sends many requests a second
 * with one key, and each would otherwise cost a lookup. Revoking or rotating a key forgets it at
 * once in this process; another process may accept it for at most this long.
 */
export const AUTH_CACHE_TTL_MS = 1000;
const AUTH_CACHE_MAX = 10_000;

export interface ApiKeysServiceDeps {
  db: Db;
  store: ApiKeysStore;
  clock: Clock;
  audit: Pick<AuditEventsService, 'record'>;
  connections: Pick<ConnectionsService, 'findMany' | 'getForReference'>;
}

export function createApiKeysService(deps: ApiKeysServiceDeps) {
  const { db, store, clock, audit, connections } = deps;
  // Keyed by the key's hash, tagged by its id: revoke and rotate know the id, never the key.
  const authenticated = new RecentReads<Principal>({ clock, ttlMs: AUTH_CACHE_TTL_MS, maxEntries: AUTH_CACHE_MAX });
  const forget = (keyId: string) => authenticated.forget(keyId);
  const principalTags = (principal: Principal) => [principal.credentialId];

  /** An unknown or revoked key throws here, so only a key that was valid when read is ever remembered. */
  async function resolve(hash: string): Promise<Principal> {
    const row = await store.findByHash(db, hash);
    if (!row) throw new AppError('credential_invalid', 'The API key is not valid.');
    if (row.revoked_at) throw new AppError('credential_revoked', 'The API key was revoked.');
    return {
      kind: row.kind === 'connection' ? 'connection_key' : 'organization_key',
      credentialId: row.id,
      organizationId: row.organization_id,
      memberId: null,
      role: null,
      mode: row.mode as Mode,
      connectionId: row.connection_id,
      scopes: new Set(JSON.parse(row.scopes) as Scope[]),
    };
  }

  async function insertKey(trx: Trx, fields: Omit<ApiKeysTable, 'id' | 'key_hash' | 'key_hint' | 'created_at' | 'revoked_at' | 'rotated_to_key_id'>) {
    const now = clock.now();
    const minted = mintKey(fields.kind as ApiKeyKind, fields.mode as Mode);
    const row: ApiKeysTable = {
      ...fields,
      id: newId('apiKey', now.getTime()),
      key_hash: minted.hash,
      key_hint: minted.hint,
      created_at: now.toISOString(),
      revoked_at: null,
      rotated_to_key_id: null,
    };
    await store.insert(trx, row);
    return { row, key: minted.key };
  }

  return {
    async create(actor: Actor, input: CreateApiKeyInput): Promise<ApiKeyWithSecret> {
      const { principal } = actor;
      if (input.kind === 'organization' && input.connection_id !== undefined) {
        throw invalidParam('/connection_id', 'is only for connection keys');
      }
      if (input.kind === 'connection' && input.connection_id === undefined) {
        throw new AppError('validation_failed', '/connection_id is required for connection keys.', {
          param: '/connection_id',
          details: [{ param: '/connection_id', code: 'missing', message: 'is required for connection keys' }],
        });
      }
      const scopes = resolveScopes(input.kind, input.scopes);
      return db.transaction().execute(async (trx) => {
        if (input.connection_id !== undefined) {
          // The key's mode must fit its connection, judged as if the new key itself were calling.
          await connections.getForReference(trx, { ...principal, mode: input.mode }, input.connection_id, '/connection_id');
        }
        const { row, key } = await insertKey(trx, {
          organization_id: principal.organizationId,
          kind: input.kind,
          mode: input.mode,
          connection_id: input.connection_id ?? null,
          name: input.name ?? null,
          scopes: JSON.stringify(scopes),
          metadata: JSON.stringify(input.metadata ?? {}),
          created_by_member_id: principal.memberId,
        });
        await audit.record(trx, actor, {
          action: 'api_key.created',
          target: { type: 'api_key', id: row.id },
          data: { kind: row.kind, mode: row.mode, connection_id: row.connection_id, scopes },
        });
        return { ...toApiKey(row), key };
      });
    },

    async list(
      principal: Principal,
      filters: { status?: 'active' | 'revoked' | undefined },
      page: PageRequest,
      expand: readonly string[] = [],
    ): Promise<Page<ApiKey>> {
      const keys = mapPage(await store.list(db, principal.organizationId, { ...filters, mode: principal.mode ?? undefined }, page), toApiKey);
      const data = await embedRelations(keys.data, expand, {
        connection: { key: (key) => key.connection_id, load: (ids) => connections.findMany(principal, ids) },
      });
      return { ...keys, data };
    },

    async revoke(actor: Actor, id: string): Promise<ApiKey> {
      return db.transaction().execute(async (trx) => {
        const row = await store.find(trx, actor.principal.organizationId, id);
        if (!visibleTo(actor.principal, row)) throw notFound('API key');
        const at = clock.now().toISOString();
        if (!(await store.revoke(trx, row.organization_id, id, at, null))) {
          throw new AppError('invalid_state', 'The key is already revoked.');
        }
        forget(id);
        await audit.record(trx, actor, { action: 'api_key.revoked', target: { type: 'api_key', id } });
        return toApiKey({ ...row, revoked_at: at });
      });
    },

    /** Replaces a key with a new one of the same kind, mode, connection and scopes; the old one stops working at once. */
    async rotate(actor: Actor, id: string): Promise<ApiKeyWithSecret> {
      return db.transaction().execute(async (trx) => {
        const old = await store.find(trx, actor.principal.organizationId, id);
        if (!visibleTo(actor.principal, old)) throw notFound('API key');
        if (old.revoked_at) throw new AppError('invalid_state', 'A revoked key cannot be rotated; create a new key.');
        const { row, key } = await insertKey(trx, {
          organization_id: old.organization_id,
          kind: old.kind,
          mode: old.mode,
          connection_id: old.connection_id,
          name: old.name,
          scopes: old.scopes,
          metadata: old.metadata,
          created_by_member_id: actor.principal.memberId,
        });
        if (!(await store.revoke(trx, old.organization_id, id, row.created_at, row.id))) {
          throw new AppError('invalid_state', 'The key was revoked while rotating it.');
        }
        forget(id);
        await audit.record(trx, actor, { action: 'api_key.rotated', target: { type: 'api_key', id }, data: { replaced_by: row.id } });
        return { ...toApiKey(row), key };
      });
    },

    /** A key remembered from the last second is answered at once, not in a promise (RecentReads.read). */
    authenticate(key: string): Principal | Promise<Principal> {
      if (!API_KEY_PATTERN.test(key)) return Promise.reject(new AppError('credential_invalid', 'The API key is malformed.'));
      const hash = sha256Hex(key);
      return authenticated.read(hash, () => resolve(hash), principalTags);
    },
  };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
