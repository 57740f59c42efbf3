import { Worker } from 'node:worker_threads';
import type { CheckpointResult } from './sqlite-checkpoint-round.js';

/**
 * WAL checkpoints, off the request path. SQLite's automatic checkpoint runs inside the commit that
 * takes the WAL past 1,000 pages, so every so often one request paid for copying the pages of all
 * the others. The adapter (`sqlite.ts`) turns it off on its connection and checkpoints from a timer
 * instead: PASSIVE every `intervalMs`, and TRUNCATE (which also empties the file) once the WAL has
 * grown past `boundPages`, if it can have the locks at once. Between rounds, a page written by many
 * requests is copied once: in a measurement of 20,000 small write transactions, rounds every 400
 * commits cost 70–75 µs of checkpointing a transaction, rounds every 100 commits 120–170 µs, so the
 * interval is a second rather than a quarter of one.
 *
 * On the event loop a round blocks every request for as long as it takes: nothing for an idle
 * service, a fraction of a millisecond under a light load, but 80–110 ms a second under the send
 * bench's load, three quarters of it waiting on fsync. So the first round that finds more than
 * `threadAfterPages` pages in the WAL moves the file's checkpoints to a thread
 * (`sqlite-checkpoint-worker.js`), one per process, which holds a connection of its own to each such
 * file and costs the requests nothing but the second core's time. The thread costs 16 MiB of
 * resident memory, which a process that never sees such a load never pays (its files are JavaScript,
 * so that it starts no TypeScript stripper of its own).
 */
export interface CheckpointOptions {
  /** How often a round runs; 0 leaves SQLite's automatic checkpoints on. */
  intervalMs: number;
  /** WAL pages past which a round truncates the WAL. */
  boundPages: number;
  /** WAL pages past which the rounds move to the checkpoint thread (0: on it from the start). */
  threadAfterPages: number;
}

export const DEFAULT_CHECKPOINTS: CheckpointOptions = { intervalMs: 1000, boundPages: 4096, threadAfterPages: 256 };

/** What the process asks of the thread: `id` names a file's connection, `request` the answer awaited. */
export type CheckpointerMessage =
  | { op: 'open'; id: number; file: string; intervalMs: number; boundPages: number }
  | { op: 'round'; id: number; request: number }
  | { op: 'close'; id: number; request: number };

export type { CheckpointResult };

export interface CheckpointerReply {
  request: number;
  result: CheckpointResult | undefined;
}

/** One file's checkpoints on the thread. */
export interface Checkpoints {
  /** Runs a round now, besides the timer's; answers what SQLite reported, or undefined when it did not run. */
  runNow(): Promise<CheckpointResult | undefined>;
  /**
   * Stops the rounds and closes the thread's connection to the file; resolves once it is closed
   * (being the last, it removes the WAL: a caller deleting the directory must wait for that).
   */
  stop(): Promise<void>;
}

let thread: Worker | undefined;
let nextId = 0;
let nextRequest = 0;
const waiting = new Map<number, (result: CheckpointResult | undefined) => void>();
/** The files being checkpointed, so that a thread started again takes them all back. */
const files = new Map<number, CheckpointerMessage & { op: 'open' }>();

/** Posts a message the thread answers, holding the thread while the answer is awaited (an unref'd one would not be). */
function ask(message: (request: number) => CheckpointerMessage): Promise<CheckpointResult | undefined> {
  const request = nextRequest++;
  const worker = checkpointThread();
  return new Promise((resolve) => {
    waiting.set(request, resolve);
    worker.ref();
    worker.postMessage(message(request));
  });
}

function checkpointThread(): Worker {
  if (thread) return thread;
  const started = new Worker(new URL('./sqlite-checkpoint-worker.js', import.meta.url));
  started.on('message', (reply: CheckpointerReply) => {
    waiting.get(reply.request)?.(reply.result);
    waiting.delete(reply.request);
    if (waiting.size === 0) started.unref();
  });
  // A thread that failed is replaced on the next message, and the new one opens every file again:
  // without rounds, a WAL would only grow.
  started.on('error', (error: Error) => process.emitWarning(`the SQLite checkpoint thread failed and is started again: ${error.message}`));
  started.on('exit', () => {
    if (thread === started) thread = undefined;
    for (const resolve of waiting.values()) resolve(undefined);
    waiting.clear();
    if (files.size > 0) for (const open of files.values()) checkpointThread().postMessage(open);
  });
  // It must never keep the process alive: the files' owners close their connections on shutdown.
  // After the listeners, which would hold it again.
  started.unref();
  thread = started;
  return started;
}

/** Ends the thread as a crash would, for the test of its replacement; answers once it is gone. */
export async function terminateCheckpointThread(): Promise<void> {
  await thread?.terminate();
}

/** Starts the checkpoints of `file`, whose connection has turned SQLite's automatic ones off. */
export function startCheckpoints(file: string, options: CheckpointOptions): Checkpoints {
  const id = nextId++;
  const open = { op: 'open', id, file, intervalMs: options.intervalMs, boundPages: options.boundPages } satisfies CheckpointerMessage;
  files.set(id, open);
  checkpointThread().postMessage(open);
  let stopped: Promise<void> | undefined;
  return {
    runNow() {
      return stopped ? Promise.resolve(undefined) : ask((request) => ({ op: 'round', id, request }));
    },
    stop() {
      if (!stopped) {
        files.delete(id);
        stopped = ask((request) => ({ op: 'close', id, request })).then(() => undefined);
      }
      return stopped;
    },
  };
}
