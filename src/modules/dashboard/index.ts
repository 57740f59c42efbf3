/**
 * The dashboard (web/), built into static files and served at /dashboard. It holds no rules of its
 * own: the browser app calls /v1 with a dashboard token like any other client.
 */
import type { Module } from '../module.ts';
import { registerDashboardRoutes } from './dashboard.routes.ts';

export function createDashboardModule(options: { directory: string }): Module {
  return { name: 'dashboard', service: undefined, routes: (server) => registerDashboardRoutes(server, options.directory) };
}
