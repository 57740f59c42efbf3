import { createContext, use, useEffect, useRef, type ReactNode } from 'react';
import type { EventEnvelope } from '../api/types.ts';

/**
 * A page's own hook into the live stream, for what the inbox's dispatcher does not keep current
 * (automations' runs, approvals, ...): the page names the event types it cares about and is told of
 * each one, or with `null` when events may have been missed (a resume the server could not honour),
 * so it fetches again what it shows.
 */
export type LiveListener = (event: EventEnvelope | null) => void;

export function createLiveEvents() {
  const subscribers = new Set<{ types: ReadonlySet<string>; listener: LiveListener }>();
  return {
    publish(event: EventEnvelope): void {
      for (const subscriber of subscribers) if (subscriber.types.has(event.type)) subscriber.listener(event);
    },
    missed(): void {
      for (const subscriber of subscribers) subscriber.listener(null);
    },
    subscribe(types: readonly string[], listener: LiveListener): () => void {
      const subscriber = { types: new Set(types), listener };
      subscribers.add(subscriber);
      return () => void subscribers.delete(subscriber);
    },
  };
}

export type LiveEvents = ReturnType<typeof createLiveEvents>;

const LiveEventsContext = createContext<LiveEvents | null>(null);

export function LiveEventsProvider({ events, children }: { events: LiveEvents; children: ReactNode }) {
  return <LiveEventsContext value={events}>{children}</LiveEventsContext>;
}

/** Calls `listener` for each event of `types` (and with null after a gap) while the component is mounted. */
export function useLiveEvents(types: readonly string[], listener: LiveListener): void {
  const events = use(LiveEventsContext);
  const latest = useRef(listener);
  latest.current = listener;
  const key = types.join(',');
  useEffect(() => events?.subscribe(key.split(','), (event) => latest.current(event)), [events, key]);
}
