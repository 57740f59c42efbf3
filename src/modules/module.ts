/**
 * The one shape of a module, as the composition root sees it: the service other modules are built
 * on, and optionally the HTTP routes it serves, the queued jobs it handles and what to close at
 * shutdown. Each module's `index.ts` builds its definition from the dependencies it names; the area
 * files in src/composition/ build the modules in dependency order and the root registers them.
 */
import type { HttpServer } from '../http/server.ts';
import type { JobDefinition } from '../jobs/job.ts';
import type { JobHandler } from '../jobs/worker.ts';

export interface JobRegistration {
  readonly definition: JobDefinition;
  readonly handler: JobHandler<JobDefinition>;
}

/** Pairs a catalogued job with the handler that runs it, keeping the payload typed on both sides. */
export function handleJob<D extends JobDefinition>(definition: D, handler: JobHandler<D>): JobRegistration {
  return { definition, handler };
}

export interface Module<S = undefined> {
  /** The folder's name, for errors at start-up. */
  readonly name: string;
  readonly service: S;
  readonly routes?: (server: HttpServer) => void;
  readonly jobs?: readonly JobRegistration[];
  /** Releases what the module holds open (sockets, pools) once the server stops. */
  readonly close?: () => Promise<void>;
}
