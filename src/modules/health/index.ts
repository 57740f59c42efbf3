/** Liveness (`/healthz`) and readiness (`/readyz`: the store answers and is migrated). */
import type { HttpServer } from '../../http/server.ts';
import { registerHealthRoutes } from './health.routes.ts';

export function createHealthModule(deps: { isReady: () => Promise<boolean> }) {
  return { registerRoutes: (app: HttpServer) => registerHealthRoutes(app, deps.isReady) };
}
