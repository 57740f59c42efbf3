import { PassThrough, type Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { encodeTime } from 'ulid';
import type { Db, Trx } from '../../db/connect.ts';
import type { EventsTable } from '../../db/schema.ts';
import { toEnvelope } from '../../events/emit.ts';
import type { EventEnvelope } from '../../events/envelope.ts';
import { SECOND, type Clock } from '../../lib/clock.ts';
import { AppError } from '../../lib/errors.ts';
import { ID_PREFIXES } from '../../lib/ids.ts';
import type { Log } from '../../lib/log.ts';
import { whenCommitted } from '../../lib/transaction-scope.ts';
import type { Principal } from '../credentials/principal.ts';
import { commentFrame, eventFrame, noticeFrame, retryFrame } from './sse.ts';
import { STREAM_NOTICES, type StreamNotice, type StreamNoticeEvent } from './stream.schemas.ts';
import type { StreamStore } from './stream.store.ts';

export interface StreamSettings {
  /** Real milliseconds between two polls of the events table while any stream is open. */
  pollIntervalMs: number;
  /**
   * How far back (by the time in the ids) each poll reads again, for events whose transaction
   * committed after a later-numbered one was already read. Must exceed the longest such delay
   * plus the clock skew between processes, since ids carry the emitting process's time.
   */
  overlapMs: number;
  /** Rows one poll reads at most; a full batch is followed at once by the next. */
  pollBatch: number;
  /** Events a resume replays at most; beyond that the stream starts with `stream.reset` instead. */
  replayLimit: number;
  /** A comment after this long without a write, on the service's clock. */
  heartbeatMs: number;
  /** How often the credential is authenticated again, on the service's clock. */
  recheckMs: number;
  /** The reconnection delay the stream asks of clients (`retry:`). */
  retryMs: number;
  /** Bytes waiting for a reader that does not keep up before its stream is closed. */
  maxBufferedBytes: number;
}

export const STREAM_SETTINGS: StreamSettings = {
  pollIntervalMs: 250,
  overlapMs: 3 * SECOND,
  pollBatch: 500,
  replayLimit: 1000,
  heartbeatMs: 15 * SECOND,
  recheckMs: 15 * SECOND,
  retryMs: 3 * SECOND,
  maxBufferedBytes: 4 * 1024 * 1024,
};

/** How long closing waits for the streams' last bytes to leave before cutting them. */
const CLOSE_GRACE_MS = 2 * SECOND;

const CREDENTIAL_FAILURES = new Set(['credential_expired', 'credential_revoked', 'credential_invalid'] as const);
type CredentialFailure = typeof CREDENTIAL_FAILURES extends Set<infer T> ? T : never;

/** The lowest id an event minted at `ms` can have: ids are `evt_<ULID>`, and a ULID starts with its time. */
function eventIdFloorAt(ms: number): string {
  return `${ID_PREFIXES.event}_${encodeTime(Math.max(0, ms), 10)}${'0'.repeat(16)}`;
}

/** One event as the stream sends it: the envelope exactly as a webhook delivery's body carries it. */
function envelopeFrame(row: EventsTable): string {
  return eventFrame(row.id, row.type, JSON.stringify(toEnvelope(row)));
}

interface OpenStream {
  readonly organizationId: string;
  /** The credential, authenticated again every `recheckMs`: a logout or a removal ends the stream. */
  readonly bearer: string;
  readonly expiresAt: number;
  readonly body: PassThrough;
  /** Ids at or below it are never sent: the resume point, or the newest event when the stream opened. */
  readonly floor: string;
  /** Ids sent and still inside the polls' reach, so an event read again is not sent twice. */
  readonly sent: Set<string>;
  lastWriteAt: number;
  checkedAt: number;
  checking: boolean;
}

export interface StreamServiceDeps {
  db: Db;
  store: StreamStore;
  clock: Clock;
  log: Log;
  /** Resolves a bearer credential as the access hook does, to check on a stream that it still holds. */
  authenticate: (bearer: string) => Promise<Principal>;
  settings?: Partial<StreamSettings>;
}

/**
 * The live stream: every open stream of this process is fed by one poller, which reads the events
 * of all the organizations with open streams in one query per tick and hands each event to that
 * organization's streams. Polling the table (rather than listening inside this process) is what
 * lets an event written by any process reach every stream, on SQLite and PostgreSQL alike; an event
 * this process emits wakes the poller as soon as it commits. The same tick sends heartbeats, ends
 * streams whose token expired, and re-authenticates their credentials.
 */
export function createStreamService(deps: StreamServiceDeps) {
  const { db, store, clock, log, authenticate } = deps;
  const settings: StreamSettings = { ...STREAM_SETTINGS, ...deps.settings };
  const streams = new Set<OpenStream>();
  const byOrganization = new Map<string, Set<OpenStream>>();

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let closing = false;
  /** Set after a full batch: the next poll goes on from there instead of the overlap window. */
  let continueFrom: string | undefined;
  let pollFailing = false;

  function register(stream: OpenStream): void {
    streams.add(stream);
    const watchers = byOrganization.get(stream.organizationId);
    if (watchers) watchers.add(stream);
    else byOrganization.set(stream.organizationId, new Set([stream]));
  }

  function forget(stream: OpenStream): void {
    if (!streams.delete(stream)) return;
    const watchers = byOrganization.get(stream.organizationId);
    watchers?.delete(stream);
    if (watchers?.size === 0) byOrganization.delete(stream.organizationId);
    if (streams.size === 0) stopPolling();
  }

  function write(stream: OpenStream, frame: string): void {
    // Destroyed when the client went away; its 'close', which forgets the stream, is still to come.
    if (stream.body.destroyed) return;
    stream.body.write(frame);
    stream.lastWriteAt = clock.now().getTime();
  }

  /** Ends a stream with a control event; it is forgotten at once, so nothing else is written to it. */
  function end(stream: OpenStream, event: StreamNoticeEvent, notice: StreamNotice): void {
    if (!streams.has(stream)) return;
    forget(stream);
    stream.body.end(noticeFrame(event, JSON.stringify(notice)));
  }

  /** A live write, after the replay has had a tick to drain: a reader that lets bytes pile up is cut off. */
  function writeLive(stream: OpenStream, frame: string): void {
    write(stream, frame);
    if (stream.body.writableLength + stream.body.readableLength > settings.maxBufferedBytes) {
      end(stream, STREAM_NOTICES.closed, {
        reason: 'slow_reader',
        message: 'The stream was read too slowly and more than the buffer holds was waiting; reconnect with Last-Event-ID.',
      });
    }
  }

  function recheck(stream: OpenStream, now: number): void {
    stream.checking = true;
    authenticate(stream.bearer)
      .then(
        () => {
          stream.checkedAt = now;
        },
        (error: unknown) => {
          if (error instanceof AppError && CREDENTIAL_FAILURES.has(error.code as CredentialFailure)) {
            end(stream, STREAM_NOTICES.expired, { reason: error.code as CredentialFailure, message: error.message });
            return;
          }
          // The store is away, most likely: the stream goes on, and asks again after the same interval.
          stream.checkedAt = now;
          log.warn({ err: error }, 'live stream: the credential could not be checked again');
        },
      )
      .finally(() => {
        stream.checking = false;
      });
  }

  function housekeep(stream: OpenStream, now: number): void {
    if (now >= stream.expiresAt) {
      end(stream, STREAM_NOTICES.expired, {
        reason: 'credential_expired',
        message: 'The dashboard token has expired; renew it with POST /auth/refresh and reconnect with Last-Event-ID.',
      });
      return;
    }
    if (now - stream.lastWriteAt >= settings.heartbeatMs) writeLive(stream, commentFrame('heartbeat'));
    if (!stream.checking && now - stream.checkedAt >= settings.recheckMs) recheck(stream, now);
  }

  function deliver(row: EventsTable): void {
    const watchers = byOrganization.get(row.organization_id);
    if (!watchers) return;
    let frame: string | undefined;
    for (const stream of watchers) {
      if (row.id <= stream.floor || stream.sent.has(row.id)) continue;
      frame ??= envelopeFrame(row);
      stream.sent.add(row.id);
      writeLive(stream, frame);
    }
  }

  async function tick(): Promise<void> {
    const now = clock.now().getTime();
    for (const stream of [...streams]) housekeep(stream, now);
    if (byOrganization.size === 0) return;
    const windowFloor = eventIdFloorAt(now - settings.overlapMs);
    const after = continueFrom ?? windowFloor;
    let rows: EventsTable[];
    try {
      rows = await store.eventsAfter(db, [...byOrganization.keys()], after, settings.pollBatch);
      if (pollFailing) log.info({}, 'live stream: polling the events table again');
      pollFailing = false;
    } catch (error) {
      if (!pollFailing) log.warn({ err: error }, 'live stream: polling the events table failed; retrying every tick');
      pollFailing = true;
      return;
    }
    continueFrom = rows.length === settings.pollBatch ? rows.at(-1)!.id : undefined;
    if (continueFrom !== undefined) again = true;
    for (const row of rows) deliver(row);
    // No later poll reads at or below this id again, so what was sent there need not be remembered.
    const reach = continueFrom !== undefined && continueFrom < windowFloor ? continueFrom : windowFloor;
    for (const stream of streams) {
      for (const id of stream.sent) if (id <= reach) stream.sent.delete(id);
    }
  }

  function schedule(delayMs: number): void {
    if (timer !== undefined || running !== undefined || streams.size === 0) return;
    timer = setTimeout(run, delayMs);
  }

  function run(): void {
    timer = undefined;
    running = tick()
      .catch((error: unknown) => log.error({ err: error }, 'live stream: a tick failed'))
      .finally(() => {
        running = undefined;
        const now = again;
        again = false;
        schedule(now ? 0 : settings.pollIntervalMs);
      });
  }

  function stopPolling(): void {
    clearTimeout(timer);
    timer = undefined;
    continueFrom = undefined;
  }

  /** Polls now rather than at the next tick: one function, so a transaction that emits many events wakes it once. */
  function wake(): void {
    if (streams.size === 0) return;
    if (running !== undefined) {
      again = true;
      return;
    }
    clearTimeout(timer);
    timer = undefined;
    schedule(0);
  }

  /** Where a new stream starts: after the resume point with its replay, or after the newest event. */
  async function startingPoint(
    organizationId: string,
    lastEventId: string | undefined,
  ): Promise<{ floor: string; replay: EventsTable[]; reset?: StreamNotice }> {
    const newest = async () => (await store.latestId(db, organizationId)) ?? '';
    if (lastEventId === undefined) return { floor: await newest(), replay: [] };
    if (!(await store.exists(db, organizationId, lastEventId))) {
      return {
        floor: await newest(),
        replay: [],
        reset: { reason: 'unknown_event_id', message: `No event ${lastEventId} to resume after; the stream starts from now.` },
      };
    }
    const replay = await store.eventsAfter(db, [organizationId], lastEventId, settings.replayLimit + 1);
    if (replay.length <= settings.replayLimit) return { floor: lastEventId, replay };
    return {
      floor: await newest(),
      replay: [],
      reset: {
        reason: 'too_many_missed',
        message: `More than ${settings.replayLimit} events followed ${lastEventId}; the stream starts from now.`,
      },
    };
  }

  return {
    /**
     * Opens a stream for a dashboard token's organization: the SSE text to send as the response
     * body, which ends when the token expires, the credential stops holding or the service closes,
     * and is forgotten when the client goes away (the body is destroyed).
     */
    async open(input: { principal: Principal; bearer: string; lastEventId: string | undefined }): Promise<Readable> {
      const { principal } = input;
      const start = await startingPoint(principal.organizationId, input.lastEventId);
      if (closing) throw new AppError('service_unavailable', 'The service is restarting; reconnect shortly.');
      const now = clock.now().getTime();
      const stream: OpenStream = {
        organizationId: principal.organizationId,
        bearer: input.bearer,
        expiresAt: principal.expiresAt === undefined ? Infinity : Date.parse(principal.expiresAt),
        body: new PassThrough(),
        floor: start.floor,
        sent: new Set(),
        lastWriteAt: now,
        checkedAt: now,
        checking: false,
      };
      write(stream, retryFrame(settings.retryMs));
      if (start.reset) write(stream, noticeFrame(STREAM_NOTICES.reset, JSON.stringify(start.reset)));
      for (const row of start.replay) {
        stream.sent.add(row.id);
        write(stream, envelopeFrame(row));
      }
      register(stream);
      stream.body.once('close', () => forget(stream));
      wake();
      return stream.body;
    },

    /** An event subscriber: an event of an organization with an open stream here wakes the poller once it commits. */
    async eventEmitted(_trx: Trx, event: EventEnvelope): Promise<void> {
      if (byOrganization.has(event.organization_id)) whenCommitted(wake);
    },

    /** What is open and whether the poller runs: for tests and for whoever wants to watch it. */
    stats(): { streams: number; polling: boolean } {
      return { streams: streams.size, polling: timer !== undefined || running !== undefined };
    },

    /**
     * Ends every stream with `stream.closed` (clients reconnect elsewhere with Last-Event-ID) and
     * stops the poller; waits a little for the last bytes to leave, then cuts what is still open.
     */
    async close(): Promise<void> {
      closing = true;
      const bodies = [...streams].map((stream) => stream.body);
      for (const stream of [...streams]) {
        end(stream, STREAM_NOTICES.closed, { reason: 'server_closing', message: 'The server is shutting down; reconnect with Last-Event-ID.' });
      }
      stopPolling();
      const closed = Promise.all(bodies.map((body) => new Promise<void>((resolve) => (body.closed ? resolve() : body.once('close', () => resolve())))));
      const grace = new AbortController();
      await Promise.race([closed, delay(CLOSE_GRACE_MS, undefined, { ref: false, signal: grace.signal }).catch(() => undefined)]);
      grace.abort();
      for (const body of bodies) body.destroy();
      await running;
    },
  };
}

export type StreamService = ReturnType<typeof createStreamService>;
