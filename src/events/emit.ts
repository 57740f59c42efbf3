import type { Db, Trx } from '../db/connect.ts';
import type { EventsTable } from '../db/schema.ts';
import type { Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import { API_VERSION, type EventType } from './event-types.schemas.ts';
import type { EventEnvelope } from './envelope.ts';
import type { EventsStore } from './events.store.ts';

export interface EventInput {
  type: EventType;
  organizationId: string;
  connectionId: string | null;
  /** The resource, exactly as its GET returns it. */
  object: Record<string, unknown>;
  /** `*.updated` events only: the changed fields with their previous values. */
  previousAttributes?: Record<string, unknown>;
}

/**
 * Reacts to an event inside the transaction that emitted it. A subscriber does cheap work there (a
 * counter, a row that starts a run) and enqueues a job for anything slow; if it throws, the change
 * that emitted the event rolls back with it, so a fact and its consequences never part.
 */
export type EventSubscriber = (trx: Trx, event: EventEnvelope) => Promise<void>;

/** Every type of the catalogue: for subscribers that see the whole stream (webhook deliveries). */
export const ALL_EVENTS = '*' as const;

export function toEnvelope(row: EventsTable): EventEnvelope {
  return {
    id: row.id,
    object: 'event',
    type: row.type as EventType,
    api_version: API_VERSION,
    created_at: row.created_at,
    organization_id: row.organization_id,
    connection_id: row.connection_id,
    data: { object: JSON.parse(row.data) as Record<string, unknown> },
    ...(row.previous_attributes === null ? {} : { previous_attributes: JSON.parse(row.previous_attributes) as Record<string, unknown> }),
  };
}

/**
 * The event stream inside the process. Emitting writes the event in the caller's transaction and
 * runs its subscribers there: if the change commits, its event and everything its subscribers did
 * commit with it (webhook deliveries queued, counters moved); if it rolls back, none of it happened.
 * Modules learn each other's facts this way instead of being called by the module that made them.
 */
export function createEventEmitter(deps: { store: EventsStore; clock: Clock }) {
  const { store, clock } = deps;
  const subscribers = new Map<EventType | typeof ALL_EVENTS, EventSubscriber[]>();

  return {
    /** Subscribes to the listed types, or to every type with `ALL_EVENTS`; subscribers run in the order they subscribed. */
    subscribe(types: readonly EventType[] | typeof ALL_EVENTS, subscriber: EventSubscriber): void {
      const keys: readonly (EventType | typeof ALL_EVENTS)[] = types === ALL_EVENTS ? [ALL_EVENTS] : types;
      for (const key of keys) subscribers.set(key, [...(subscribers.get(key) ?? []), subscriber]);
    },

    async emit(trx: Trx, input: EventInput): Promise<EventEnvelope> {
      if (input.previousAttributes !== undefined && !input.type.endsWith('.updated')) {
        throw new Error(`previous_attributes belong only on *.updated events, not ${input.type}`);
      }
      const now = clock.now();
      const row: EventsTable = {
        id: newId('event', now.getTime()),
        organization_id: input.organizationId,
        connection_id: input.connectionId,
        type: input.type,
        data: JSON.stringify(input.object),
        previous_attributes: input.previousAttributes === undefined ? null : JSON.stringify(input.previousAttributes),
        created_at: now.toISOString(),
      };
      await store.insert(trx, row);
      const event = toEnvelope(row);
      for (const subscriber of subscribers.get(input.type) ?? []) await subscriber(trx, event);
      for (const subscriber of subscribers.get(ALL_EVENTS) ?? []) await subscriber(trx, event);
      return event;
    },

    async find(db: Db, organizationId: string, id: string): Promise<EventEnvelope | undefined> {
      const row = await store.find(db, organizationId, id);
      return row ? toEnvelope(row) : undefined;
    },
  };
}

export type EventEmitter = ReturnType<typeof createEventEmitter>;

/** What a module that announces facts needs: emitting, and nothing of who listens. */
export type EventSink = Pick<EventEmitter, 'emit'>;
