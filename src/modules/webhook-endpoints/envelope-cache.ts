import type { EventEnvelope } from '../../events/envelope.ts';
import { MINUTE, type Clock } from '../../lib/clock.ts';

/**
 * An event as a delivery sends it: its bytes, and what the attempt's headers and row name. Compact on
 * purpose: the envelope's object tree is dropped once serialised, so a cached event costs its bytes
 * and little more.
 */
export interface SendableEvent {
  readonly id: string;
  readonly type: string;
  readonly organizationId: string;
  readonly connectionId: string | null;
  readonly body: string;
}

export function toSendable(event: EventEnvelope): SendableEvent {
  return { id: event.id, type: event.type, organizationId: event.organization_id, connectionId: event.connection_id, body: JSON.stringify(event) };
}

/**
 * Room for the events queued for delivery in this process, counted in the characters of their bodies
 * (a string's size in memory, one or two bytes each): 4 Mi holds a backlog of 8,500 of the webhooks
 * bench's 491-byte envelopes, and the bursts it measures (2,000 events) whole.
 */
export const QUEUED_ENVELOPES_BUDGET = 4 * 1024 * 1024;

/**
 * How long an event queued here is kept for deliveries that have not run here: another process's
 * worker may have taken them (a shared PostgreSQL queue), or the transaction that queued them rolled
 * back. Longer than a backlog the budget can hold takes to drain.
 */
export const QUEUED_ENVELOPE_TTL_MS = 10 * MINUTE;

interface Queued {
  readonly event: SendableEvent;
  /** Deliveries queued here that have not yet run. */
  pending: number;
  readonly expiresAt: number;
}

/**
 * The events this process queued for delivery, kept from their emit until their deliveries here have
 * run, so that a delivery neither reads its event back nor serialises it again.
 *
 * Why not a cache that drops its oldest entry when full (as before, 1,024 events): a burst queues
 * events faster than they are delivered, and deliveries run oldest first, so the entries dropped were
 * exactly the next ones needed: half of a 2,000-event burst read its event back and serialised it
 * again. Here an event stays until its last delivery ran, and an event that finds no room is not kept
 * (its deliveries read it, as before) rather than pushing out one whose delivery is next. The room is
 * bounded by bytes; an entry whose deliveries never run here goes after `QUEUED_ENVELOPE_TTL_MS`,
 * oldest first, when room is wanted.
 */
export class QueuedEnvelopes {
  readonly #clock: Clock;
  readonly #budget: number;
  readonly #ttlMs: number;
  /** In the order queued, which is also the order they expire in. */
  readonly #entries = new Map<string, Queued>();
  #size = 0;

  constructor(clock: Clock, options: { budget?: number; ttlMs?: number } = {}) {
    this.#clock = clock;
    this.#budget = options.budget ?? QUEUED_ENVELOPES_BUDGET;
    this.#ttlMs = options.ttlMs ?? QUEUED_ENVELOPE_TTL_MS;
  }

  /** The body sizes held now, in UTF-16 code units. */
  get size(): number {
    return this.#size;
  }

  get(id: string): SendableEvent | undefined {
    return this.#entries.get(id)?.event;
  }

  /** Keeps an event for its `deliveries` queued here, when there is room; answers whether it was kept. */
  keep(event: SendableEvent, deliveries: number): boolean {
    if (deliveries < 1 || this.#entries.has(event.id)) return false;
    const now = this.#clock.now().getTime();
    this.#dropExpired(now);
    if (this.#size + event.body.length > this.#budget) return false;
    this.#entries.set(event.id, { event, pending: deliveries, expiresAt: now + this.#ttlMs });
    this.#size += event.body.length;
    return true;
  }

  /** One delivery of the event ran here (whatever its outcome): the last one frees its room. */
  delivered(id: string): void {
    const entry = this.#entries.get(id);
    if (!entry || --entry.pending > 0) return;
    this.#entries.delete(id);
    this.#size -= entry.event.body.length;
  }

  #dropExpired(now: number): void {
    for (const [id, entry] of this.#entries) {
      if (entry.expiresAt > now) return;
      this.#entries.delete(id);
      this.#size -= entry.event.body.length;
    }
  }
}
