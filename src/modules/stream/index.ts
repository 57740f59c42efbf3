/**
 * The live stream (`GET /v1/stream`): the organization's event envelopes as Server-Sent Events, for
 * the dashboard. Owns no table: it reads the events table, through one poller per process shared by
 * every open stream, so that events written by any process reach it; resumes with Last-Event-ID,
 * sends heartbeats, and ends each stream when its dashboard token expires (docs/stream.md).
 */
import { ALL_EVENTS, type EventEmitter } from '../../events/emit.ts';
import type { AuthService } from '../auth/index.ts';
import type { Module } from '../module.ts';
import { registerStreamRoutes } from './stream.routes.ts';
import { createStreamService, type StreamService, type StreamServiceDeps } from './stream.service.ts';
import { createStreamStore } from './stream.store.ts';

export function createStreamModule(
  deps: Omit<StreamServiceDeps, 'store' | 'authenticate'> & { events: Pick<EventEmitter, 'subscribe'>; auth: Pick<AuthService, 'authenticate'> },
): Module<StreamService> {
  const service = createStreamService({ ...deps, store: createStreamStore(), authenticate: (bearer) => deps.auth.authenticate(bearer) });
  // Wakes the poller when this process emits, so its own events need not wait for the next tick.
  deps.events.subscribe(ALL_EVENTS, service.eventEmitted);
  return { name: 'stream', service, routes: (server) => registerStreamRoutes(server, service), close: () => service.close() };
}

export type { StreamService } from './stream.service.ts';
