/**
 * The one shape of a module, as the composition root sees it: the service other modules are built
 * on, and optionally the HTTP routes it serves, the queued jobs it handles and what to close at
 * shutdown. Each module's `index.ts` builds its definition from the dependencies it names; the area
 * files in src/composition/ build the modules in dependency order and the root registers them.
 */
import type { HttpServer } from '../http/server.ts';
import type { JobRegistration } from '../jobs/worker.ts';

export { handleJob, type JobRegistration } from '../jobs/worker.ts';

export interface Module<S = undefined> {
  /** The folder's name, for errors at start-up. */
  readonly name: string;
  readonly service: S;
  readonly routes?: (server: HttpServer) => void;
  readonly jobs?: readonly JobRegistration[];
  /** Releases what the module holds open (sockets, pools) once the server stops. */
  readonly close?: () => Promise<void>;
}
