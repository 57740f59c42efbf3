import type { Db, Trx } from '../../db/connect.ts';
import { toBoolean } from '../../db/dialect.ts';
import { mapPage, type Page, type PageRequest } from '../../db/pagination.ts';
import type { ConnectionsTable } from '../../db/schema.ts';
import type { EventSink } from '../../events/emit.ts';
import type { EventType } from '../../events/event-types.schemas.ts';
import { connectionOnboard, connectionOnboardingDeadline } from '../../jobs/catalog.ts';
import { JobError } from '../../jobs/job.ts';
import type { Queue } from '../../jobs/queue.ts';
import { HOUR, type Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { AppError, invalidParam, notFound } from '../../lib/errors.ts';
import { newId } from '../../lib/ids.ts';
import { mergeMetadata } from '../../lib/metadata.ts';
import {
  isProviderError,
  providerErrorToAppError,
  type PhoneNumberInfo,
  type Provider,
  type ProviderCredentials,
  type ProviderError,
} from '../../provider/provider.ts';
import { THROUGHPUT_PER_SECOND } from '../../provider/pacing.ts';
import type { AuditEventsService, SystemActor } from '../audit-events/index.ts';
import { connectionScopeOf, type Actor, type Principal } from '../credentials/principal.ts';
import {
  QUALITY_RATINGS,
  type ConnectInput,
  type Connection,
  type ConnectionStatus,
  type Onboarding,
  type QualityRating,
  type ReauthoriseInput,
  type UpdateConnectionInput,
} from './connections.schemas.ts';
import type { ConnectionChanges, ConnectionsStore } from './connections.store.ts';

/** How long a coexistence import may stay silent before it is reported failed. */
export const ONBOARDING_DEADLINE_MS = 24 * HOUR;

/** What the onboarding column holds: the API's fields plus the progress of the requests made. */
interface StoredOnboarding extends Onboarding {
  contacts_requested: boolean;
  history_requested: boolean;
}

function toConnection(row: ConnectionsTable): Connection {
  const onboarding = row.onboarding === null ? null : (JSON.parse(row.onboarding) as StoredOnboarding);
  return {
    id: row.id,
    object: 'connection',
    name: row.name,
    status: row.status as ConnectionStatus,
    test: toBoolean(row.test),
    coexistence: toBoolean(row.coexistence),
    phone_number_id: row.phone_number_id ?? '',
    waba_id: row.waba_id ?? '',
    display_phone_number: row.display_phone_number,
    verified_name: row.verified_name,
    quality_rating: row.quality_rating as QualityRating | null,
    messaging_limit_tier: row.messaging_limit_tier,
    throughput_per_second: row.throughput_per_second ?? THROUGHPUT_PER_SECOND.standard,
    onboarding: onboarding && {
      status: onboarding.status,
      progress: onboarding.progress,
      messages_imported: onboarding.messages_imported,
      started_at: onboarding.started_at,
      completed_at: onboarding.completed_at,
      failure_reason: onboarding.failure_reason,
    },
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    connected_at: row.connected_at,
    disconnected_at: row.disconnected_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function qualityOf(info: PhoneNumberInfo): QualityRating | null {
  const rating = info.qualityRating?.toLowerCase();
  if (rating === undefined) return null;
  return (QUALITY_RATINGS as readonly string[]).includes(rating) ? (rating as QualityRating) : 'unknown';
}

function throughputOf(info: PhoneNumberInfo, coexistence: boolean): number {
  if (coexistence) return THROUGHPUT_PER_SECOND.coexistence;
  return info.throughputLevel?.toUpperCase() === 'HIGH' ? THROUGHPUT_PER_SECOND.upgraded : THROUGHPUT_PER_SECOND.standard;
}

/** The stored fields that mirror the provider's view of the number. */
function numberFields(info: PhoneNumberInfo, coexistence: boolean) {
  return {
    display_phone_number: info.displayPhoneNumber,
    verified_name: info.verifiedName,
    quality_rating: qualityOf(info),
    messaging_limit_tier: info.messagingLimitTier ?? null,
    throughput_per_second: throughputOf(info, coexistence),
  };
}

/**
 * The mode rule of the spec: a test key reaches only test connections. A live key is not confined:
 * an organization key grants every connection of its organization, test ones included. Whether
 * traffic is test is the connection's `test` flag, never the key's mode.
 */
export function assertModeAllows(principal: Principal, connection: { test: boolean }, param?: string): void {
  if (principal.mode === 'test' && !connection.test) {
    throw new AppError('test_key_on_live_connection', 'A test key cannot be used against a live connection.', { param: param ?? null });
  }
}

/** What a module that talks to the provider for a connection needs. */
export interface ProviderAccess {
  connectionId: string;
  organizationId: string;
  test: boolean;
  credentials: ProviderCredentials;
  throughputPerSecond: number;
}

/** A connection as the service itself sees it, without a caller: for the provider's webhooks and jobs. */
export interface ServingConnection {
  id: string;
  organizationId: string;
  test: boolean;
  coexistence: boolean;
  phoneNumberId: string;
  displayPhoneNumber: string | null;
}

export interface ConnectionsServiceDeps {
  db: Db;
  store: ConnectionsStore;
  clock: Clock;
  audit: Pick<AuditEventsService, 'record'>;
  events: EventSink;
  queue: Queue;
  secrets: Pick<SecretBox, 'seal' | 'open'>;
  provider: Provider;
}

export function createConnectionsService(deps: ConnectionsServiceDeps) {
  const { db, store, clock, audit, events, queue, secrets, provider } = deps;

  /** Resolves a connection the caller may address: tenant, connection key and mode rules in one place. */
  /** `param` names the field that held the id, when it is not the path's own. */
  async function getRow(executor: Db, principal: Principal, id: string, param?: string): Promise<ConnectionsTable> {
    const missing = () => (param ? new AppError('resource_not_found', `No such connection: ${id}.`, { param }) : notFound('connection'));
    if (principal.connectionId && principal.connectionId !== id) throw missing();
    const row = await store.find(executor, principal.organizationId, id);
    if (!row) throw missing();
    assertModeAllows(principal, { test: toBoolean(row.test) }, param);
    return row;
  }

  function credentialsOf(row: ConnectionsTable): ProviderCredentials {
    if (row.access_token === null || row.phone_number_id === null || row.waba_id === null) {
      throw new AppError('connection_inactive', 'The connection has no provider access: it was disconnected.');
    }
    return {
      accessToken: secrets.open(row.access_token),
      phoneNumberId: row.phone_number_id,
      wabaId: row.waba_id,
      messagesPerSecond: row.throughput_per_second ?? THROUGHPUT_PER_SECOND.standard,
    };
  }

  /** What talking to the provider for a connection takes, refused unless the connection is connected. */
  function accessOf(row: ConnectionsTable): ProviderAccess {
    if (row.status === 'needs_reauth') throw new AppError('connection_needs_reauth');
    if (row.status !== 'connected') throw new AppError('connection_inactive', 'The connection was disconnected.');
    return {
      connectionId: row.id,
      organizationId: row.organization_id,
      test: toBoolean(row.test),
      credentials: credentialsOf(row),
      throughputPerSecond: row.throughput_per_second ?? THROUGHPUT_PER_SECOND.standard,
    };
  }

  /** Calls the provider; a failure becomes the API's error, and an expired token marks the connection. */
  async function callProvider<T>(row: ConnectionsTable | undefined, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (!isProviderError(error)) throw error;
      if (row && error.category === 'auth') await markNeedsReauth(row.id, error);
      throw providerErrorToAppError(error);
    }
  }

  async function emit(trx: Trx, type: EventType, row: ConnectionsTable): Promise<Connection> {
    const connection = toConnection(row);
    await events.emit(trx, { type, organizationId: row.organization_id, connectionId: row.id, object: connection });
    return connection;
  }

  /** Applies changes to a row inside `trx` and returns the row as it now stands. */
  async function change(trx: Trx, row: ConnectionsTable, changes: ConnectionChanges): Promise<ConnectionsTable> {
    const next = { ...row, ...changes, updated_at: clock.now().toISOString() };
    await store.update(trx, row.id, { ...changes, updated_at: next.updated_at });
    return next;
  }

  async function markNeedsReauth(connectionId: string, cause: ProviderError): Promise<void> {
    await db.transaction().execute(async (trx) => {
      const row = await store.findById(trx, connectionId);
      if (!row || row.status !== 'connected') return;
      const next = await change(trx, row, { status: 'needs_reauth' });
      await audit.record(trx, system(row), {
        action: 'connection.needs_reauth',
        target: { type: 'connection', id: row.id },
        data: { provider_code: cause.code ?? null },
      });
      await emit(trx, 'connection.needs_reauth', next);
    });
  }

  const system = (row: ConnectionsTable): SystemActor => ({ system: true, organizationId: row.organization_id });

  /**
   * Reads the number from the provider and records what moved: quality and messaging limit changes
   * are events. Used by sync and when the provider says the number's quality changed.
   */
  async function refreshNumber(row: ConnectionsTable): Promise<ConnectionsTable> {
    const info = await callProvider(row, () => provider.getPhoneNumber(credentialsOf(row)));
    return db.transaction().execute(async (trx) => {
      const current = await store.findById(trx, row.id);
      if (!current || current.status === 'disconnected') throw new AppError('connection_inactive', 'The connection was disconnected.');
      const fields = numberFields(info, toBoolean(current.coexistence));
      const next = await change(trx, current, fields);
      if (current.quality_rating !== next.quality_rating) await emit(trx, 'connection.quality_changed', next);
      if (current.messaging_limit_tier !== next.messaging_limit_tier) await emit(trx, 'connection.limit_changed', next);
      return next;
    });
  }

  async function updateOnboarding(trx: Trx, row: ConnectionsTable, update: (onboarding: StoredOnboarding) => StoredOnboarding): Promise<ConnectionsTable> {
    const onboarding = JSON.parse(row.onboarding ?? 'null') as StoredOnboarding | null;
    if (onboarding === null) return row;
    return change(trx, row, { onboarding: JSON.stringify(update(onboarding)) });
  }

  async function failOnboarding(trx: Trx, row: ConnectionsTable, reason: string): Promise<void> {
    const next = await updateOnboarding(trx, row, (onboarding) => ({ ...onboarding, status: 'failed', failure_reason: reason }));
    await emit(trx, 'onboarding.failed', next);
  }

  return {
    /**
     * Connects a number: spends the signup code for a business token, reads the number, subscribes
     * our app to the account's webhooks, and stores the token sealed. Coexistence numbers then import
     * their history through the `connection.onboard` job, which survives a restart.
     */
    async connect(actor: Actor, input: ConnectInput): Promise<Connection> {
      const { principal } = actor;
      const test = input.test ?? principal.mode === 'test';
      assertModeAllows(principal, { test }, input.test === undefined ? undefined : '/test');
      const coexistence = input.coexistence ?? false;
      if (coexistence && input.pin !== undefined) {
        throw invalidParam('/pin', 'is not used for coexistence numbers, which stay registered to the business app');
      }

      const exchanged = await callProvider(undefined, () => provider.exchangeCode(input.code));
      const wabaId = input.waba_id ?? exchanged.wabaId;
      const phoneNumberId = input.phone_number_id ?? exchanged.phoneNumberId;
      if (wabaId === undefined) throw invalidParam('/waba_id', 'is required: the provider did not say which business account the code grants');
      if (phoneNumberId === undefined) throw invalidParam('/phone_number_id', 'is required: the business account has more than one number');
      const credentials: ProviderCredentials = { accessToken: exchanged.accessToken, phoneNumberId, wabaId };

      // Reading the number first proves the token reaches it before anything is changed at the provider.
      const info = await callProvider(undefined, () => provider.getPhoneNumber(credentials));
      const serving = await store.findServing(db, phoneNumberId);
      if (serving)
        throw new AppError('resource_exists', 'This number is already connected.', { param: input.phone_number_id === undefined ? null : '/phone_number_id' });
      if (input.pin !== undefined) await callProvider(undefined, () => provider.registerNumber(credentials, input.pin!));
      await callProvider(undefined, () => provider.subscribeApp(credentials));

      const now = clock.now().toISOString();
      const row: ConnectionsTable = {
        id: newId('connection', clock.now().getTime()),
        organization_id: principal.organizationId,
        name: input.name ?? null,
        status: 'connected',
        test: test ? 1 : 0,
        coexistence: coexistence ? 1 : 0,
        phone_number_id: phoneNumberId,
        waba_id: wabaId,
        ...numberFields(info, coexistence),
        metadata: JSON.stringify(input.metadata ?? {}),
        access_token: secrets.seal(exchanged.accessToken),
        onboarding: coexistence
          ? JSON.stringify({
              status: 'pending',
              progress: 0,
              messages_imported: 0,
              started_at: now,
              completed_at: null,
              failure_reason: null,
              contacts_requested: false,
              history_requested: false,
            } satisfies StoredOnboarding)
          : null,
        connected_at: now,
        disconnected_at: null,
        created_at: now,
        updated_at: now,
      };
      return db.transaction().execute(async (trx) => {
        // Two connects of one number can race past the check above; the second loses here.
        if (await store.findServing(trx, phoneNumberId)) throw new AppError('resource_exists', 'This number is already connected.');
        await store.insert(trx, row);
        await audit.record(trx, actor, {
          action: 'connection.connected',
          target: { type: 'connection', id: row.id },
          data: { phone_number_id: phoneNumberId, test, coexistence },
        });
        if (coexistence) {
          await queue.enqueue(trx, connectionOnboard, { connection_id: row.id });
          await queue.enqueue(
            trx,
            connectionOnboardingDeadline,
            { connection_id: row.id },
            {
              runAt: new Date(clock.now().getTime() + ONBOARDING_DEADLINE_MS),
              dedupeKey: `onboarding-deadline:${row.id}`,
            },
          );
        }
        return emit(trx, 'connection.connected', row);
      });
    },

    async get(principal: Principal, id: string): Promise<Connection> {
      return toConnection(await getRow(db, principal, id));
    },

    /** For other modules that take a `connection_id` in a body: `param` names the field in errors. */
    async getForReference(executor: Db, principal: Principal, id: string, param: string): Promise<Connection> {
      return toConnection(await getRow(executor, principal, id, param));
    },

    /** The connections among `ids` the caller may see, by id: one query for a whole page's worth. */
    async findMany(principal: Principal, ids: readonly string[]): Promise<Map<string, Connection>> {
      const rows = await store.findMany(db, principal.organizationId, ids);
      const visible = rows.filter((row) => !principal.connectionId || row.id === principal.connectionId);
      return new Map(visible.map((row) => [row.id, toConnection(row)]));
    },

    async list(principal: Principal, filters: { status?: ConnectionStatus | undefined }, page: PageRequest): Promise<Page<Connection>> {
      return mapPage(await store.list(db, connectionScopeOf(principal), filters, page), toConnection);
    },

    async update(actor: Actor, id: string, input: UpdateConnectionInput): Promise<Connection> {
      return db.transaction().execute(async (trx) => {
        const row = await getRow(trx, actor.principal, id);
        const next = await change(trx, row, { name: input.name === undefined ? row.name : input.name, metadata: mergeMetadata(row.metadata, input.metadata) });
        await audit.record(trx, actor, { action: 'connection.updated', target: { type: 'connection', id }, data: { name: next.name } });
        return toConnection(next);
      });
    },

    /**
     * Reads the number's state from the provider again (quality, messaging limit, throughput, name).
     * The sync endpoint then reads the account's templates through the templates module.
     */
    async sync(actor: Actor, id: string): Promise<Connection> {
      const row = await getRow(db, actor.principal, id);
      if (row.status === 'disconnected') throw new AppError('connection_inactive', 'The connection was disconnected.');
      if (row.status === 'needs_reauth') throw new AppError('connection_needs_reauth');
      const refreshed = await refreshNumber(row);
      return toConnection(refreshed);
    },

    /** Exchanges a new signup code for the same number, and reconnects a connection that needs it. */
    async reauthorise(actor: Actor, id: string, input: ReauthoriseInput): Promise<Connection> {
      const row = await getRow(db, actor.principal, id);
      if (row.status === 'disconnected')
        throw new AppError('connection_inactive', 'A disconnected connection cannot be re-authorised; connect the number again.');
      const exchanged = await callProvider(undefined, () => provider.exchangeCode(input.code));
      if (exchanged.wabaId !== undefined && exchanged.wabaId !== row.waba_id) {
        throw invalidParam('/code', 'grants another business account than this connection’s');
      }
      const credentials = { accessToken: exchanged.accessToken, phoneNumberId: row.phone_number_id!, wabaId: row.waba_id! };
      const info = await callProvider(undefined, () => provider.getPhoneNumber(credentials));
      await callProvider(undefined, () => provider.subscribeApp(credentials));
      return db.transaction().execute(async (trx) => {
        const current = await getRow(trx, actor.principal, id);
        const next = await change(trx, current, {
          ...numberFields(info, toBoolean(current.coexistence)),
          status: 'connected',
          access_token: secrets.seal(exchanged.accessToken),
          connected_at: clock.now().toISOString(),
        });
        await audit.record(trx, actor, { action: 'connection.reauthorised', target: { type: 'connection', id } });
        return emit(trx, 'connection.connected', next);
      });
    },

    /**
     * Disconnects a number: unsubscribes our app, forgets the token and stops its pending work. The
     * record stays, as `disconnected`, because its messages and conversations still belong to it.
     */
    async disconnect(actor: Actor, id: string): Promise<Connection> {
      const row = await getRow(db, actor.principal, id);
      if (row.status === 'disconnected') return toConnection(row);
      if (row.access_token !== null && row.status === 'connected') {
        try {
          await provider.unsubscribeApp(credentialsOf(row));
        } catch (error) {
          // The owner may already have removed our access at the provider: that is the goal anyway.
          if (!isProviderError(error) || (error.category !== 'auth' && error.category !== 'rejected')) throw providerErrorToAppError(error as ProviderError);
        }
      }
      return db.transaction().execute(async (trx) => {
        const current = await getRow(trx, actor.principal, id);
        if (current.status === 'disconnected') return toConnection(current);
        const next = await change(trx, current, { status: 'disconnected', access_token: null, disconnected_at: clock.now().toISOString() });
        await queue.cancel(trx, `onboarding-deadline:${id}`);
        await audit.record(trx, actor, { action: 'connection.disconnected', target: { type: 'connection', id } });
        return emit(trx, 'connection.disconnected', next);
      });
    },

    /** Provider access for a connection the caller may address, refused unless it is connected. */
    async providerAccess(principal: Principal, id: string, param?: string): Promise<ProviderAccess> {
      return accessOf(await getRow(db, principal, id, param));
    },

    /**
     * Provider access for the service's own queued work (a send, a media fetch), which has no caller:
     * the job's payload names a connection its own organization's work was filed under.
     */
    async providerAccessForWork(id: string): Promise<ProviderAccess> {
      const row = await store.findById(db, id);
      if (!row) throw notFound('connection');
      return accessOf(row);
    },

    /** The organization, mode and messaging tier of a connection, for work that has no caller (an automation deciding whether it runs there, usage). */
    async modeOf(executor: Db, id: string): Promise<{ organizationId: string; test: boolean; messagingLimitTier: string | null } | undefined> {
      const row = await store.findById(executor, id);
      return row && { organizationId: row.organization_id, test: toBoolean(row.test), messagingLimitTier: row.messaging_limit_tier };
    },

    /** Records that the provider refused the connection's token (an answer 190, say). */
    async reportProviderError(connectionId: string, error: ProviderError): Promise<void> {
      if (error.category === 'auth') await markNeedsReauth(connectionId, error);
    },

    /** The connection serving a number, for the provider's webhooks: at most one is not disconnected. */
    async findServing(executor: Db, phoneNumberId: string): Promise<ServingConnection | undefined> {
      const row = await store.findServing(executor, phoneNumberId);
      return (
        row && {
          id: row.id,
          organizationId: row.organization_id,
          test: toBoolean(row.test),
          coexistence: toBoolean(row.coexistence),
          phoneNumberId,
          displayPhoneNumber: row.display_phone_number,
        }
      );
    },

    /** The connections serving a business account's numbers, for the provider's account-wide webhooks. */
    async findServingAccount(executor: Db, wabaId: string): Promise<ServingConnection[]> {
      return (await store.findServingAccount(executor, wabaId)).map((row) => ({
        id: row.id,
        organizationId: row.organization_id,
        test: toBoolean(row.test),
        coexistence: toBoolean(row.coexistence),
        phoneNumberId: row.phone_number_id ?? '',
        displayPhoneNumber: row.display_phone_number,
      }));
    },

    /** The provider says a number's quality or limit moved: read it again, which emits what changed. */
    async numberQualityChanged(wabaId: string, displayPhoneNumber: string): Promise<void> {
      const digits = displayPhoneNumber.replace(/\D/g, '');
      for (const row of await store.findServingAccount(db, wabaId)) {
        if ((row.display_phone_number ?? '').replace(/\D/g, '') !== digits || row.status !== 'connected') continue;
        try {
          await refreshNumber(row);
        } catch (error) {
          // A number whose token just expired is marked by refreshNumber; nothing more can be read.
          if (!(error instanceof AppError && error.code === 'connection_needs_reauth')) throw error;
        }
      }
    },

    /** The provider says our access to an account ended (app removed, account deleted). */
    async accountRemoved(wabaId: string, event: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        for (const row of await store.findServingAccount(trx, wabaId)) {
          const next = await change(trx, row, { status: 'disconnected', access_token: null, disconnected_at: clock.now().toISOString() });
          await queue.cancel(trx, `onboarding-deadline:${row.id}`);
          await audit.record(trx, system(row), {
            action: 'connection.disconnected',
            target: { type: 'connection', id: row.id },
            data: { provider_event: event },
          });
          await emit(trx, 'connection.disconnected', next);
        }
      });
    },

    /** The `connection.onboard` job: asks the provider for the contacts and the history, once each. */
    async requestHistory(connectionId: string): Promise<void> {
      const row = await store.findById(db, connectionId);
      if (!row || row.status !== 'connected' || row.onboarding === null) return;
      const onboarding = JSON.parse(row.onboarding) as StoredOnboarding;
      if (onboarding.status !== 'pending') return;
      for (const kind of ['contacts', 'history'] as const) {
        if (onboarding[`${kind}_requested`]) continue;
        try {
          await provider.requestHistorySync(credentialsOf(row), kind);
        } catch (error) {
          if (!isProviderError(error)) throw error;
          if (error.category === 'auth') await markNeedsReauth(row.id, error);
          if (error.retryable) throw new JobError(error.message, { retryable: true, cause: error });
          await db.transaction().execute(async (trx) => failOnboarding(trx, (await store.findById(trx, row.id))!, error.message));
          return;
        }
        onboarding[`${kind}_requested`] = true;
        await store.update(db, row.id, { onboarding: JSON.stringify(onboarding) });
      }
      await db.transaction().execute(async (trx) => {
        const current = (await store.findById(trx, row.id))!;
        const next = await updateOnboarding(trx, current, (stored) => (stored.status === 'pending' ? { ...stored, status: 'importing' } : stored));
        await emit(trx, 'onboarding.progress', next);
      });
    },

    /** One chunk of imported history arrived (its messages already stored in `trx`). */
    async historyImported(
      trx: Trx,
      connectionId: string,
      chunk: { progress: number | undefined; messages: number; failure: string | undefined },
    ): Promise<void> {
      const row = await store.findById(trx, connectionId);
      if (!row || row.onboarding === null) return;
      const before = JSON.parse(row.onboarding) as StoredOnboarding;
      if (chunk.failure !== undefined) {
        if (before.status !== 'completed' && before.status !== 'failed') await failOnboarding(trx, row, chunk.failure);
        return;
      }
      // Chunks arrive in any order: progress only moves forward, and a late chunk still counts.
      const progress = Math.max(before.progress, Math.min(100, Math.round(chunk.progress ?? before.progress)));
      const completed = progress === 100 && before.status !== 'completed';
      const next = await updateOnboarding(trx, row, (stored) => ({
        ...stored,
        status: completed ? 'completed' : stored.status === 'pending' ? 'importing' : stored.status,
        progress,
        messages_imported: stored.messages_imported + chunk.messages,
        completed_at: completed ? clock.now().toISOString() : stored.completed_at,
      }));
      await emit(trx, 'onboarding.progress', next);
      if (completed) {
        await queue.cancel(trx, `onboarding-deadline:${connectionId}`);
        await emit(trx, 'onboarding.completed', next);
      }
    },

    /** The `connection.onboarding_deadline` job: an import that never finished is reported failed. */
    async onboardingDeadline(connectionId: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const row = await store.findById(trx, connectionId);
        if (!row || row.onboarding === null) return;
        const onboarding = JSON.parse(row.onboarding) as StoredOnboarding;
        if (onboarding.status === 'completed' || onboarding.status === 'failed') return;
        await failOnboarding(trx, row, 'The provider sent no complete history within 24 hours of the request.');
      });
    },
  };
}

export type ConnectionsService = ReturnType<typeof createConnectionsService>;
