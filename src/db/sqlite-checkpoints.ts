import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints, off the request path and off its thread. SQLite's automatic checkpoint runs
 * inside the commit that takes the WAL past 1,000 pages, so every so often one request paid for
 * copying the pages of all the others. The adapter turns it off on its connection and leaves the
 * checkpoints to one thread per process (`sqlite-checkpoint-worker.ts`), which holds a connection to
 * each file: PASSIVE every `intervalMs`, and TRUNCATE (which also empties the file) once the WAL has
 * grown past `boundPages`, if it can have the locks at once. On the event loop, as a timer, a round
 * blocked every request for 80–110 ms a second under the send bench's load, three quarters of it
 * waiting on fsync; on its own thread it costs the requests nothing but the second core's time.
 * The thread costs about 20 MiB of resident memory, once per process (docs/benchmarks.md#memory).
 */
export interface CheckpointOptions {
  /** How often the PASSIVE checkpoint runs; 0 leaves SQLite's automatic checkpoints on. */
  intervalMs: number;
  /** WAL pages past which a round truncates the WAL. */
  boundPages: number;
}

export const DEFAULT_CHECKPOINTS: CheckpointOptions = { intervalMs: 1000, boundPages: 4096 };

/** What `PRAGMA wal_checkpoint` answers: whether it was blocked, the WAL's pages, and those copied. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

export type CheckpointerMessage =
  { op: 'open'; id: number; file: string; intervalMs: number; boundPages: number } | { op: 'round'; id: number; request: number } | { op: 'close'; id: number };

export type CheckpointerReply = { op: 'round'; id: number; request: number; result: CheckpointResult | undefined };

/** One file's checkpoints on the thread. */
export interface Checkpoints {
  /** Runs a round now, besides the timer's; answers what SQLite reported, or undefined when it did not run. */
  runNow(): Promise<CheckpointResult | undefined>;
  /** Stops the rounds and closes the thread's connection to the file. */
  stop(): void;
}

let thread: Worker | undefined;
let nextId = 0;
let nextRequest = 0;
const waiting = new Map<number, (result: CheckpointResult | undefined) => void>();

function checkpointThread(): Worker {
  if (thread) return thread;
  const started = new Worker(new URL('./sqlite-checkpoint-worker.ts', import.meta.url));
  // It must never keep the process alive: the files' owners close their connections on shutdown.
  started.unref();
  started.on('message', (reply: CheckpointerReply) => {
    waiting.get(reply.request)?.(reply.result);
    waiting.delete(reply.request);
    if (waiting.size === 0) started.unref();
  });
  // A thread that died takes its rounds with it: the WAL grows until the next file opened starts
  // another. Rounds asked for meanwhile answer that they did not run.
  started.on('error', () => undefined);
  started.on('exit', () => {
    if (thread === started) thread = undefined;
    for (const resolve of waiting.values()) resolve(undefined);
    waiting.clear();
  });
  thread = started;
  return started;
}

/** Starts the checkpoints of `file`, whose connection has turned SQLite's automatic ones off. */
export function startCheckpoints(file: string, options: CheckpointOptions): Checkpoints {
  const id = nextId++;
  const worker = checkpointThread();
  worker.postMessage({ op: 'open', id, file, ...options } satisfies CheckpointerMessage);
  let stopped = false;
  return {
    runNow() {
      if (stopped) return Promise.resolve(undefined);
      const request = nextRequest++;
      return new Promise((resolve) => {
        waiting.set(request, resolve);
        // Held while someone awaits an answer, which an unref'd thread would not wait for.
        worker.ref();
        worker.postMessage({ op: 'round', id, request } satisfies CheckpointerMessage);
      });
    },
    stop() {
      if (stopped) return;
      stopped = true;
      worker.postMessage({ op: 'close', id } satisfies CheckpointerMessage);
    },
  };
}
