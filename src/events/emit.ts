import type { Db } from '../db/connect.ts';
import type { EventsTable } from '../db/schema.ts';
import { webhookDelivery } from '../jobs/catalog.ts';
import type { Queue } from '../jobs/queue.ts';
import type { Clock } from '../lib/clock.ts';
import { newId } from '../lib/ids.ts';
import { API_VERSION, type EventType } from './catalog.ts';
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

/** Finds the endpoints that want an event: enabled, subscribed to its type, and of its connection if they name one. */
export type FindSubscribers = (trx: Db, organizationId: string, type: EventType, connectionId: string | null) => Promise<string[]>;

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
 * Emitting an event writes it and one delivery job per subscribed endpoint in the caller's
 * transaction: if the change commits, its event will be delivered; if it rolls back, nothing is sent.
 */
export function createEventEmitter(deps: { store: EventsStore; queue: Queue; clock: Clock; findSubscribers: FindSubscribers }) {
  const { store, queue, clock, findSubscribers } = deps;
  return {
    async emit(trx: Db, input: EventInput): Promise<EventEnvelope> {
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
      for (const endpointId of await findSubscribers(trx, input.organizationId, input.type, input.connectionId)) {
        await queue.enqueue(trx, webhookDelivery, { event_id: row.id, endpoint_id: endpointId });
      }
      return toEnvelope(row);
    },

    async find(db: Db, organizationId: string, id: string): Promise<EventEnvelope | undefined> {
      const row = await store.find(db, organizationId, id);
      return row ? toEnvelope(row) : undefined;
    },
  };
}

export type EventEmitter = ReturnType<typeof createEventEmitter>;
