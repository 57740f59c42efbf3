import { useEffect, useRef } from 'react';
import type { EventEnvelope } from '../api/types.ts';

type EventType = EventEnvelope['type'];
type Listener = (event: EventEnvelope) => void;

/**
 * The live stream's events for pages that react to a few types themselves (the history import's
 * progress bar), beside what `dispatch.ts` applies to the shared cache for every page. One tab has
 * one stream, so one set of listeners per tab is the stream's own scope.
 */
const listeners = new Set<Listener>();

/** Hands an event the stream received to every page that subscribed to its type. */
export function publishLiveEvent(event: EventEnvelope): void {
  for (const listener of listeners) listener(event);
}

/**
 * Calls `handler` for each event of `types` the stream delivers while the component is mounted.
 * The latest handler is called, so it may close over fresh state without resubscribing.
 */
export function useLiveEvents(types: readonly EventType[], handler: (event: EventEnvelope) => void): void {
  const latest = useRef(handler);
  latest.current = handler;
  const key = types.join(',');
  useEffect(() => {
    const wanted = new Set<string>(key.split(','));
    const listener: Listener = (event) => {
      if (wanted.has(event.type)) latest.current(event);
    };
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, [key]);
}
