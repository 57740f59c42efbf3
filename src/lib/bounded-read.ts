/**
 * One request sent through undici's `dispatch`, its answer read into memory within limits: the
 * guarded client's transport (guarded-http.ts).
 *
 * Why not `Dispatcher.request`, which does the same with a stream: its handler assigns an arrow
 * function to a property for every request (`this.abort = (reason) => controller.abort(reason)`,
 * undici's `api-request.js`), and V8's parser allocates a function literal assigned to a property in
 * the old generation (`CreateClosure … #1`, "pretenured", meant for `Foo.prototype.bar = function`).
 * A scavenge takes every pointer from old objects as live, dead or not, so through that function's
 * context each request's objects (its handler, its controller, the socket's closure, the response
 * stream) survived the next scavenge and were promoted, about 2.7 KB a request: half of what a webhook
 * delivery promoted, and most of the major collections of a webhook burst
 * (docs/benchmarks.md, "the twenty-first pass"). This handler is a class with methods; it stores no
 * function literal anywhere, and it keeps the body as chunks instead of a stream.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

export interface ReadLimits {
  /** How much of the body is kept. */
  keepBytes: number;
  /** Reading stops (and the connection is closed) once this many bytes have arrived. */
  maxBytes: number;
  /** Reading stops (and the connection is closed) this long after the headers. */
  budgetMs: number;
}

/** What was read of a body. */
export interface BodyRead {
  /** The first `keepBytes` of the body. */
  body: Buffer;
  /** How many bytes arrived before reading stopped (at most a chunk past `maxBytes`). */
  bytesRead: number;
  /** Whether the body was read to its end (false: cut at `maxBytes`, by the budget or by the peer). */
  complete: boolean;
}

export type ReadOutcome =
  | ({ kind: 'response'; status: number; headers: IncomingHttpHeaders } & BodyRead)
  /** No answer: the error undici reported, or the reason given to `abortUnanswered`. */
  | { kind: 'error'; error: unknown };

/** Why a read the reader itself stopped closes its connection (never reported). */
class ReadStopped extends Error {}

export class BoundedRead implements Dispatcher.DispatchHandler {
  /** Settles once: with the answer, or with why there is none. */
  readonly outcome: Promise<ReadOutcome>;
  #settle!: (outcome: ReadOutcome) => void;
  #controller: Dispatcher.DispatchController | undefined;
  /** An abort asked for before undici handed over the controller. */
  #pendingAbort: Error | undefined;
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  #kept: Buffer[] = [];
  #keptBytes = 0;
  #bytesRead = 0;
  #budget: NodeJS.Timeout | undefined;
  #settled = false;
  readonly #limits: ReadLimits;

  constructor(limits: ReadLimits) {
    this.#limits = limits;
    this.outcome = new Promise<ReadOutcome>((resolve) => {
      this.#settle = resolve;
    });
  }

  /** Whether the final status and headers have arrived. */
  get answered(): boolean {
    return this.#status !== 0;
  }

  /** Gives up on a request whose status and headers have not arrived; a body being read is left to its budget. */
  abortUnanswered(reason: Error): void {
    if (this.#settled || this.answered) return;
    this.#finish({ kind: 'error', error: reason });
    this.#abort(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#pendingAbort) controller.abort(this.#pendingAbort);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // 1xx answers are interim; the final one follows on the same request.
    if (statusCode < 200 || this.#settled) return;
    this.#status = statusCode;
    this.#headers = headers;
    this.#budget = setTimeout(stopReading, this.#limits.budgetMs, this);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#bytesRead += chunk.length;
    const room = this.#limits.keepBytes - this.#keptBytes;
    if (room > 0) {
      const piece = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.#kept.push(piece);
      this.#keptBytes += piece.length;
    }
    if (this.#bytesRead >= this.#limits.maxBytes) this.stop();
  }

  onResponseEnd(): void {
    this.#answer(true);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    // A body cut off by the peer after the headers still leaves the status standing.
    if (this.answered) this.#answer(false);
    else this.#finish({ kind: 'error', error });
  }

  /** Stops reading, keeps what arrived, and closes the connection rather than drain the rest. */
  stop(): void {
    if (this.#settled) return;
    this.#answer(false);
    this.#abort(new ReadStopped('read stopped at its limit'));
  }

  #answer(complete: boolean): void {
    const kept = this.#kept;
    this.#finish({
      kind: 'response',
      status: this.#status,
      headers: this.#headers,
      body: kept.length === 1 ? kept[0]! : Buffer.concat(kept, this.#keptBytes),
      bytesRead: this.#bytesRead,
      complete,
    });
  }

  #finish(outcome: ReadOutcome): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#budget);
    this.#settle(outcome);
  }

  #abort(reason: Error): void {
    if (this.#controller) {
      if (!this.#controller.aborted) this.#controller.abort(reason);
    } else {
      this.#pendingAbort = reason;
    }
  }
}

// A module function handed its reader, not a closure made per request.
function stopReading(read: BoundedRead): void {
  read.stop();
}
