import type { EventEnvelope } from '../api/types.ts';
import { readSse } from './sse.ts';

/**
 * The client of `GET /v1/stream` (docs/stream.md): reads the organization's events as Server-Sent
 * Events over `fetch` (EventSource cannot send the bearer), and keeps reading across everything that
 * ends a connection: the token's expiry (`stream.expired`: renew, reconnect), a refused token (401:
 * the same), the server closing (`stream.closed`), a dropped network (reconnect with backoff). Each
 * reconnection sends `Last-Event-ID`, so the server replays what was missed; an event seen twice
 * (a replay overlapping what arrived) is handed on once.
 */
export type LiveStatus = 'connecting' | 'live' | 'reconnecting' | 'stopped';

export interface EventStreamOptions {
  /** The raw response of a request with the current bearer (`useApi().open`). */
  open(path: string, options: { headers: Record<string, string>; signal: AbortSignal }): Promise<Response>;
  currentToken(): string | null;
  /** Renews the token unless `stale` was already replaced; null when the session is over. */
  renew(stale: string): Promise<string | null>;
  onEvent(event: EventEnvelope): void;
  /**
   * What was loaded before `before` (a `Date.now()`) may have missed events: the server could not
   * resume where this client left off (`stream.reset`), or this is the first connection, and what was
   * loaded before it opened is older than the stream.
   */
  onStale(before: number): void;
  onStatus(status: LiveStatus): void;
}

/** The stream's control notices (they carry no id, so Last-Event-ID stays the last real event). */
const NOTICE = { reset: 'stream.reset', expired: 'stream.expired', closed: 'stream.closed' } as const;

/** The server heartbeats every 15 s: this long without a byte means the connection died unnoticed. */
const SILENCE_LIMIT_MS = 45_000;
const DEFAULT_RETRY_MS = 3_000;
const MAX_BACKOFF_MS = 30_000;
/** The server replays at most 1,000 events on a resume: remembering as many ids covers any overlap. */
const REMEMBERED_IDS = 1_000;

/** Ids seen lately, oldest forgotten first. */
function recentIds(limit: number) {
  const ids = new Set<string>();
  return {
    /** False when `id` was seen already. */
    add(id: string): boolean {
      if (ids.has(id)) return false;
      ids.add(id);
      if (ids.size > limit) ids.delete(ids.values().next().value!);
      return true;
    },
  };
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** Starts reading; `stop()` ends it for good (sign-out, unmount). */
export function startEventStream(options: EventStreamOptions): { stop(): void } {
  const stopping = new AbortController();
  const seen = recentIds(REMEMBERED_IDS);
  let lastEventId: string | undefined;
  let retryMs = DEFAULT_RETRY_MS;
  let failures = 0;
  let status: LiveStatus | undefined;

  const setStatus = (next: LiveStatus) => {
    if (next === status) return;
    status = next;
    options.onStatus(next);
  };

  /** After a failure: the server's `retry`, doubled for each failure in a row, with jitter so tabs do not return together. */
  const backoff = () => {
    const ms = Math.min(MAX_BACKOFF_MS, retryMs * 2 ** Math.min(failures, 5));
    failures++;
    return wait(ms / 2 + (Math.random() * ms) / 2, stopping.signal);
  };

  /** One connection, read to its end; answers what to do next. */
  async function connect(): Promise<'renew' | 'reconnect' | 'reconnect_now' | 'retry_later' | 'stop'> {
    const connection = new AbortController();
    const cut = () => connection.abort();
    stopping.signal.addEventListener('abort', cut, { once: true });
    let silence: ReturnType<typeof setTimeout> | undefined;
    const heard = () => {
      clearTimeout(silence);
      silence = setTimeout(cut, SILENCE_LIMIT_MS);
    };
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (lastEventId) headers['last-event-id'] = lastEventId;
      const response = await options.open('/v1/stream', { headers, signal: connection.signal });
      if (response.status === 401) return 'renew';
      if (!response.ok || !response.body) {
        await response.body?.cancel();
        if (response.status === 400 && lastEventId) {
          // A resume point the server cannot read: start afresh, and refetch what is shown.
          lastEventId = undefined;
          options.onStale(Date.now());
          return 'reconnect_now';
        }
        return 'retry_later';
      }
      // Without a resume point (a first connection, or none received yet) the stream starts from
      // now: whatever was loaded before may have missed events.
      const firstConnection = lastEventId === undefined;
      failures = 0;
      setStatus('live');
      if (firstConnection) options.onStale(Date.now());
      heard();
      let ending: 'renew' | 'reconnect' = 'reconnect';
      for await (const block of readSse(response.body, heard)) {
        if (block.retry !== undefined) retryMs = block.retry;
        if (block.id) lastEventId = block.id;
        const message = block.message;
        if (!message) continue;
        if (message.event === NOTICE.expired) ending = 'renew';
        else if (message.event === NOTICE.reset) options.onStale(Date.now());
        else if (message.event === NOTICE.closed) ending = 'reconnect';
        else if (message.id) {
          lastEventId = message.id;
          if (seen.add(message.id)) dispatch(message.data);
        }
      }
      return ending;
    } catch {
      // A network failure or the silence limit (stopping aside): either way, come back after a pause.
      return stopping.signal.aborted ? 'stop' : 'retry_later';
    } finally {
      clearTimeout(silence);
      stopping.signal.removeEventListener('abort', cut);
    }
  }

  function dispatch(data: string): void {
    let event: EventEnvelope;
    try {
      event = JSON.parse(data) as EventEnvelope;
    } catch {
      return;
    }
    try {
      options.onEvent(event);
    } catch (error) {
      // One event the page cannot apply must not end the stream for every later one.
      console.warn('live: an event could not be applied', event.type, error);
    }
  }

  void (async () => {
    setStatus('connecting');
    while (!stopping.signal.aborted) {
      const token = options.currentToken();
      if (!token) break;
      const next = await connect();
      if (stopping.signal.aborted || next === 'stop') break;
      setStatus('reconnecting');
      if (next === 'renew') {
        // The session renews once for every tab and request; null means it is over (signed out).
        if (!(await options.renew(token).catch(() => token))) break;
        // A token refused again right after its renewal is not renewed in a loop.
        if (failures > 0) await backoff();
        else failures++;
      } else if (next === 'retry_later') await backoff();
      else if (next === 'reconnect') await wait(retryMs, stopping.signal);
    }
    setStatus('stopped');
  })();

  return { stop: () => stopping.abort() };
}
