import type { RouteOptions } from 'fastify';

/** A route's hooks of one kind as a list, to append to in `onRoute`: Fastify takes one or an array. */
export function routeHooks<T>(existing: T | T[] | undefined): T[] {
  if (existing === undefined) return [];
  return Array.isArray(existing) ? existing : [existing];
}

/** A route's methods as a list: Fastify takes one or an array. */
export function routeMethods(route: Pick<RouteOptions, 'method'>): string[] {
  return routeHooks(route.method);
}
