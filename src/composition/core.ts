import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { ensureMasterKey, type Config } from '../config/config.ts';
import type { Db, Store } from '../db/connect.ts';
import { createEventEmitter, type EventEmitter } from '../events/emit.ts';
import { createEventsStore } from '../events/events.store.ts';
import { queueMaintenanceJobs } from '../jobs/maintenance.ts';
import { createQueue, type Queue } from '../jobs/queue.ts';
import { createWorker, type JobRegistration, type Worker } from '../jobs/worker.ts';
import type { Clock } from '../lib/clock.ts';
import type { Metrics } from '../lib/metrics.ts';
import { SecretBox } from '../lib/crypto.ts';
import { whenCommitted } from '../lib/transaction-scope.ts';
import type { MediaStorage } from '../modules/media/index.ts';
import { buildProvider, type ProviderWiring } from './provider.ts';

/**
 * What every area builds on: the store, time, secrets, the job queue, the event stream, the provider,
 * where media bytes live and the metrics port.
 */
export interface Core {
  config: Config;
  store: Store;
  db: Db;
  clock: Clock;
  log: FastifyBaseLogger;
  secrets: SecretBox;
  queue: Queue;
  worker: Worker;
  events: EventEmitter;
  provider: ProviderWiring;
  /** Opened by createApp, which closes it: an object store's client is loaded only when configured. */
  mediaStorage: MediaStorage;
  /** Where the provider, the pacer and the webhook sender report (`NO_METRICS` without METRICS_TOKEN). */
  metrics: Metrics;
  /** The queue's own jobs (its housekeeping), registered with the modules' ones. */
  jobs: readonly JobRegistration[];
}

export function buildCore(options: {
  config: Config;
  store: Store;
  clock: Clock;
  log: FastifyBaseLogger;
  localUrl: () => string;
  redis: Redis | undefined;
  mediaStorage: MediaStorage;
  metrics: Metrics;
}): Core {
  const { config, store, clock, log, metrics } = options;
  const masterKey = ensureMasterKey(config);
  const worker = createWorker({
    db: store.db,
    commitWithRequests: store.commitWithRequests,
    clock,
    log,
    leaseMs: config.workerLeaseMs,
    sharedQueue: store.dialect.sharedByProcesses,
    wakeSignal: store.wakeSignal,
  });
  // One function, so that a request queueing many jobs wakes the workers once, after it commits:
  // this process's at once, the other processes' through the store (PostgreSQL).
  const wakeWorker = () => {
    worker.wake();
    void store.wakeSignal?.send();
  };
  return {
    config,
    store,
    db: store.db,
    clock,
    log,
    secrets: new SecretBox(masterKey),
    worker,
    queue: createQueue({ clock, onEnqueue: () => whenCommitted(wakeWorker) }),
    events: createEventEmitter({ store: createEventsStore(), clock }),
    provider: buildProvider(config, store, clock, masterKey, options.localUrl, options.redis, metrics),
    metrics,
    jobs: queueMaintenanceJobs({ db: store.db, clock, log }),
    mediaStorage: options.mediaStorage,
  };
}
