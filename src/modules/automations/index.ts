/**
 * Automations: what a business wants done on its own when a message arrives, a conversation starts,
 * an event fires, a schedule comes due or its API asks. Owns /v1/automations, their immutable
 * versions (the definition checked on write: its schema, its graph, its expressions), deploying one
 * of them (and rolling back), enabling and disabling, and the count of failed runs that disables an
 * automation by itself (`automation.auto_disabled`). Runs are the runs module's: it reads deployed
 * versions through `AutomationsForRuns` and hands back, with `attachRuns`, what settles runs in
 * flight when the deployed version changes (automation-runs.ts).
 */
import type { Module } from '../module.ts';
import { registerAutomationsRoutes } from './automations.routes.ts';
import { createAutomationsService, type AutomationsService, type AutomationsServiceDeps } from './automations.service.ts';
import { createAutomationsStore } from './automations.store.ts';

export function createAutomationsModule(deps: Omit<AutomationsServiceDeps, 'store'>): Module<AutomationsService> {
  const service = createAutomationsService({ ...deps, store: createAutomationsStore() });
  return { name: 'automations', service, routes: (server) => registerAutomationsRoutes(server, service) };
}

export type { AutomationsService } from './automations.service.ts';
export type { Automation, AutomationVersion, Deployment } from './automations.schemas.ts';
export type { AutomationsForRuns, DeployedAutomation, InFlightRuns, InFlightCounts, InFlightPolicy, RunEnding } from './automation-runs.ts';
