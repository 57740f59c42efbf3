/** Liveness (`/healthz`) and readiness (`/readyz`: the store answers and is migrated, and the media storage can be written). */
import type { Module } from '../module.ts';
import { registerHealthRoutes } from './health.routes.ts';

export function createHealthModule(deps: { isReady: () => Promise<boolean> }): Module {
  return { name: 'health', service: undefined, routes: (server) => registerHealthRoutes(server, deps.isReady) };
}
