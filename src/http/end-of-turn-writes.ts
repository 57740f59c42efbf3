import type { FastifyRequest, onSendHookHandler } from 'fastify';
import { routeHooks } from './route-hooks.ts';
import type { HttpServer } from './server.ts';

type Release = (error: null, payload: unknown) => void;

/** How a batch asks to be run once the turn's I/O callbacks are done: `setImmediate` in the service. */
export type ScheduleAfterIo = (run: () => void) => void;

/**
 * The most answers held at once; the one that reaches it writes them all. Eight back-to-back writes
 * spare a waiting reader most of its wake-ups, and keep a turn's held requests few: held without a
 * bound, every request of a busy turn was alive at its scavenges, and the events list cost 10–15 %
 * more CPU than answering each at once (docs/benchmarks.md).
 */
export const MAX_HELD_ANSWERS = 8;

const afterIo: ScheduleAfterIo = (run) => void setImmediate(run);

/**
 * Answers held until the end of the event loop's turn, then written one after another.
 *
 * Why: a client waiting on its socket is woken by the kernel for each answer written to it. Under
 * load one turn handles the requests of many connections, and written as each is ready the answers
 * arrive a handler's time apart, so a waiting client (a proxy, a load balancer, another service on
 * the same host) is woken once per answer: on loopback that wake-up is charged to the writer, and
 * was a tenth of the identity route's CPU (docs/benchmarks.md). Written together, the
 * answers after the first find their reader awake. An answer waits at most for the rest of its
 * turn; a lone request's turn ends when it has been answered.
 */
export class EndOfTurnWrites {
  readonly #schedule: ScheduleAfterIo;
  /** Triples of request, the hook's release and the payload, in the order the answers were ready. */
  #held: unknown[] = [];
  #scheduled = false;

  constructor(schedule: ScheduleAfterIo = afterIo) {
    this.#schedule = schedule;
  }

  hold(request: FastifyRequest, release: Release, payload: unknown): void {
    if (this.#holds(request)) {
      // Fastify takes a reply for sent once its write has ended: while held, an async handler that
      // sends without returning the reply is sent again (undefined) when its promise settles.
      // Written once, as it was before answers were held; the mistake is named in the log.
      request.log.error({ route: request.routeOptions.url }, 'the answer was sent twice: a handler or hook that sends must return the reply');
      return;
    }
    if (!this.#scheduled) {
      this.#scheduled = true;
      this.#schedule(this.flush);
    }
    this.#held.push(request, release, payload);
    if (this.#held.length >= MAX_HELD_ANSWERS * 3) this.#write();
  }

  #holds(request: FastifyRequest): boolean {
    for (let i = 0; i < this.#held.length; i += 3) if (this.#held[i] === request) return true;
    return false;
  }

  /** Writes every answer held; bound, as the scheduler calls it on its own. */
  readonly flush = (): void => {
    this.#scheduled = false;
    this.#write();
  };

  #write(): void {
    const held = this.#held;
    this.#held = [];
    for (let i = 0; i < held.length; i += 3) {
      const request = held[i] as FastifyRequest;
      try {
        (held[i + 1] as Release)(null, held[i + 2]);
      } catch (error) {
        // One answer that cannot be written must not keep the others of its turn unwritten.
        request.log.error({ err: error }, 'writing the answer failed');
        request.raw.socket?.destroy();
      }
    }
  }
}

/**
 * Makes holding each answer to the end of its turn the last `onSend` hook of every route added from
 * now on: after the request's commit (write-requests.ts), so that only the socket write waits. Must
 * be registered after every plugin that appends route-level hooks, and before the routes.
 */
export function registerEndOfTurnWrites(app: HttpServer): void {
  const writes = new EndOfTurnWrites();
  const hold: onSendHookHandler = (request, _reply, payload, done) => writes.hold(request, done, payload);
  app.addHook('onRoute', (route) => {
    route.onSend = [...routeHooks(route.onSend), hold];
  });
}
